#include "stages/trace/rocpd_schema.hpp"

#include <string>

namespace rpl::stages::rocpd {
namespace {

// The templates below restate the schema 3.0.0 layout (docs: shared/reference/rocpd.md §1.2, §1.5):
// `{{uuid}}` is the table suffix and `{{guid}}` the dashed uuid, as in rocprofv3's SQL files.
// Column order matters to readers that SELECT *, so it follows rocprofv3 exactly.

constexpr std::string_view tables_template = R"sql(
CREATE TABLE IF NOT EXISTS rocpd_metadata{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  tag TEXT NOT NULL,
  value TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS rocpd_string{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  string TEXT NOT NULL UNIQUE ON CONFLICT ABORT);

CREATE TABLE IF NOT EXISTS rocpd_info_node{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  hash BIGINT NOT NULL UNIQUE,
  machine_id TEXT NOT NULL UNIQUE,
  system_name TEXT,
  hostname TEXT,
  release TEXT,
  version TEXT,
  hardware_name TEXT,
  domain_name TEXT);

CREATE TABLE IF NOT EXISTS rocpd_info_process{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  ppid INTEGER,
  pid INTEGER NOT NULL,
  init BIGINT,
  fini BIGINT,
  start BIGINT,
  "end" BIGINT,
  command TEXT,
  environment JSONB NOT NULL DEFAULT '{}',
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_info_thread{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  ppid INTEGER,
  pid INTEGER NOT NULL,
  tid INTEGER NOT NULL,
  name TEXT,
  start BIGINT,
  "end" BIGINT,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_info_agent{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  type TEXT CHECK (type IN ('CPU', 'GPU')),
  absolute_index INTEGER,
  logical_index INTEGER,
  type_index INTEGER,
  uuid INTEGER,
  name TEXT,
  model_name TEXT,
  vendor_name TEXT,
  product_name TEXT,
  user_name TEXT,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_info_queue{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  name TEXT,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_info_stream{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  name TEXT,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_info_pmc{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  agent_id INTEGER,
  target_arch TEXT CHECK (target_arch IN ('CPU', 'GPU')),
  event_code INT,
  instance_id INTEGER,
  name TEXT NOT NULL,
  symbol TEXT NOT NULL,
  description TEXT,
  long_description TEXT DEFAULT '',
  component TEXT,
  units TEXT DEFAULT '',
  value_type TEXT CHECK (value_type IN ('ABS', 'ACCUM', 'RELATIVE')),
  block TEXT,
  expression TEXT,
  is_constant INTEGER,
  is_derived INTEGER,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (agent_id) REFERENCES rocpd_info_agent{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_info_code_object{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  agent_id INTEGER,
  uri TEXT,
  load_base BIGINT,
  load_size BIGINT,
  load_delta BIGINT,
  storage_type TEXT CHECK (storage_type IN ('FILE', 'MEMORY')),
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (agent_id) REFERENCES rocpd_info_agent{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_info_kernel_symbol{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  code_object_id INTEGER NOT NULL,
  kernel_name TEXT,
  display_name TEXT,
  kernel_object INTEGER,
  kernarg_segment_size INTEGER,
  kernarg_segment_alignment INTEGER,
  group_segment_size INTEGER,
  private_segment_size INTEGER,
  sgpr_count INTEGER,
  arch_vgpr_count INTEGER,
  accum_vgpr_count INTEGER,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (code_object_id) REFERENCES rocpd_info_code_object{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_track{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER,
  tid INTEGER,
  name_id INTEGER,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (tid) REFERENCES rocpd_info_thread{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (name_id) REFERENCES rocpd_string{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_event{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  category_id INTEGER,
  stack_id INTEGER,
  parent_stack_id INTEGER,
  correlation_id INTEGER,
  call_stack JSONB NOT NULL DEFAULT '{}',
  line_info JSONB NOT NULL DEFAULT '{}',
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (category_id) REFERENCES rocpd_string{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_arg{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  event_id INTEGER NOT NULL,
  position INTEGER NOT NULL,
  type TEXT NOT NULL,
  name TEXT NOT NULL,
  value TEXT,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (event_id) REFERENCES rocpd_event{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_pmc_event{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  event_id INTEGER,
  pmc_id INTEGER NOT NULL,
  value REAL DEFAULT 0.0,
  extdata JSONB DEFAULT '{}',
  FOREIGN KEY (pmc_id) REFERENCES rocpd_info_pmc{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (event_id) REFERENCES rocpd_event{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_region{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  tid INTEGER NOT NULL,
  start BIGINT NOT NULL,
  "end" BIGINT NOT NULL,
  name_id INTEGER NOT NULL,
  event_id INTEGER,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (tid) REFERENCES rocpd_info_thread{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (name_id) REFERENCES rocpd_string{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (event_id) REFERENCES rocpd_event{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_sample{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  track_id INTEGER NOT NULL,
  timestamp BIGINT NOT NULL,
  event_id INTEGER,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (track_id) REFERENCES rocpd_track{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (event_id) REFERENCES rocpd_event{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_kernel_dispatch{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  tid INTEGER,
  agent_id INTEGER NOT NULL,
  kernel_id INTEGER NOT NULL,
  dispatch_id INTEGER NOT NULL,
  queue_id INTEGER NOT NULL,
  stream_id INTEGER NOT NULL,
  start BIGINT NOT NULL,
  "end" BIGINT NOT NULL,
  private_segment_size INTEGER,
  group_segment_size INTEGER,
  workgroup_size_x INTEGER NOT NULL,
  workgroup_size_y INTEGER NOT NULL,
  workgroup_size_z INTEGER NOT NULL,
  grid_size_x INTEGER NOT NULL,
  grid_size_y INTEGER NOT NULL,
  grid_size_z INTEGER NOT NULL,
  region_name_id INTEGER,
  event_id INTEGER,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (tid) REFERENCES rocpd_info_thread{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (agent_id) REFERENCES rocpd_info_agent{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (kernel_id) REFERENCES rocpd_info_kernel_symbol{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (queue_id) REFERENCES rocpd_info_queue{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (stream_id) REFERENCES rocpd_info_stream{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (region_name_id) REFERENCES rocpd_string{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (event_id) REFERENCES rocpd_event{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_memory_copy{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  tid INTEGER,
  start BIGINT NOT NULL,
  "end" BIGINT NOT NULL,
  name_id INTEGER NOT NULL,
  dst_agent_id INTEGER,
  dst_address INTEGER,
  src_agent_id INTEGER,
  src_address INTEGER,
  size INTEGER NOT NULL,
  queue_id INTEGER,
  stream_id INTEGER,
  region_name_id INTEGER,
  event_id INTEGER,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (tid) REFERENCES rocpd_info_thread{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (name_id) REFERENCES rocpd_string{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (dst_agent_id) REFERENCES rocpd_info_agent{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (src_agent_id) REFERENCES rocpd_info_agent{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (queue_id) REFERENCES rocpd_info_queue{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (stream_id) REFERENCES rocpd_info_stream{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (region_name_id) REFERENCES rocpd_string{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (event_id) REFERENCES rocpd_event{{uuid}} (id) ON UPDATE CASCADE);

CREATE TABLE IF NOT EXISTS rocpd_memory_allocate{{uuid}} (
  id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
  guid TEXT NOT NULL DEFAULT '{{guid}}',
  nid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  tid INTEGER,
  agent_id INTEGER,
  type TEXT CHECK (type IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM')),
  level TEXT CHECK (level IN ('REAL', 'VIRTUAL', 'SCRATCH')),
  start BIGINT NOT NULL,
  "end" BIGINT NOT NULL,
  address INTEGER,
  size INTEGER NOT NULL,
  queue_id INTEGER,
  stream_id INTEGER,
  event_id INTEGER,
  extdata JSONB NOT NULL DEFAULT '{}',
  FOREIGN KEY (nid) REFERENCES rocpd_info_node{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (pid) REFERENCES rocpd_info_process{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (tid) REFERENCES rocpd_info_thread{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (agent_id) REFERENCES rocpd_info_agent{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (queue_id) REFERENCES rocpd_info_queue{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (stream_id) REFERENCES rocpd_info_stream{{uuid}} (id) ON UPDATE CASCADE,
  FOREIGN KEY (event_id) REFERENCES rocpd_event{{uuid}} (id) ON UPDATE CASCADE);
)sql";

// Data views (ROCm 7.0 data_views.sql, rocpd.md §1.5). Every join also matches guid, which keeps
// the rows of different processes apart once several files are unioned.
constexpr std::string_view data_views_sql = R"sql(
CREATE VIEW IF NOT EXISTS code_objects AS
SELECT CO.id, CO.guid, CO.nid, P.pid, A.absolute_index AS agent_abs_index, CO.uri, CO.load_base,
       CO.load_size, CO.load_delta, CO.storage_type AS storage_type_str,
       JSON_EXTRACT(CO.extdata, '$.size') AS code_object_size,
       JSON_EXTRACT(CO.extdata, '$.storage_type') AS storage_type,
       JSON_EXTRACT(CO.extdata, '$.memory_base') AS memory_base,
       JSON_EXTRACT(CO.extdata, '$.memory_size') AS memory_size
FROM rocpd_info_code_object CO
JOIN rocpd_info_agent A ON A.id = CO.agent_id AND A.guid = CO.guid
JOIN rocpd_info_process P ON P.id = CO.pid AND P.guid = CO.guid;

CREATE VIEW IF NOT EXISTS kernel_symbols AS
SELECT KS.id, KS.guid, KS.nid, P.pid, KS.code_object_id, KS.kernel_name, KS.display_name,
       KS.kernel_object, KS.kernarg_segment_size, KS.kernarg_segment_alignment,
       KS.group_segment_size, KS.private_segment_size, KS.sgpr_count, KS.arch_vgpr_count,
       KS.accum_vgpr_count,
       JSON_EXTRACT(KS.extdata, '$.size') AS kernel_symbol_size,
       JSON_EXTRACT(KS.extdata, '$.kernel_id') AS kernel_id,
       JSON_EXTRACT(KS.extdata, '$.kernel_code_entry_byte_offset') AS kernel_code_entry_byte_offset,
       JSON_EXTRACT(KS.extdata, '$.formatted_kernel_name') AS formatted_kernel_name,
       JSON_EXTRACT(KS.extdata, '$.demangled_kernel_name') AS demangled_kernel_name,
       JSON_EXTRACT(KS.extdata, '$.truncated_kernel_name') AS truncated_kernel_name,
       JSON_EXTRACT(KS.extdata, '$.kernel_address.handle') AS kernel_address
FROM rocpd_info_kernel_symbol KS
JOIN rocpd_info_process P ON P.id = KS.pid AND P.guid = KS.guid;

CREATE VIEW IF NOT EXISTS processes AS
SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
       N.version AS system_version, P.guid, P.ppid, P.pid, P.init, P.start, P."end", P.fini,
       P.command
FROM rocpd_info_process P
JOIN rocpd_info_node N ON N.id = P.nid AND N.guid = P.guid;

CREATE VIEW IF NOT EXISTS threads AS
SELECT N.id AS nid, N.machine_id, N.system_name, N.hostname, N.release AS system_release,
       N.version AS system_version, P.guid, P.ppid, P.pid, T.tid, T.start, T."end", T.name
FROM rocpd_info_thread T
JOIN rocpd_info_process P ON P.id = T.pid AND P.guid = T.guid
JOIN rocpd_info_node N ON N.id = T.nid AND N.guid = T.guid;

CREATE VIEW IF NOT EXISTS regions AS
SELECT R.id, R.guid,
       (SELECT CS.string FROM rocpd_string CS WHERE CS.id = E.category_id AND CS.guid = E.guid)
         AS category,
       S.string AS name, R.nid, P.pid, T.tid, R.start, R."end", (R."end" - R.start) AS duration,
       R.event_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id, E.extdata,
       E.call_stack, E.line_info
FROM rocpd_region R
JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid
JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid
JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid;

CREATE VIEW IF NOT EXISTS region_args AS
SELECT R.id, R.guid, R.nid, P.pid, A.type, A.name, A.value
FROM rocpd_region R
JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = R.guid
JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid;

CREATE VIEW IF NOT EXISTS samples AS
SELECT SA.id, SA.guid,
       (SELECT CS.string FROM rocpd_string CS WHERE CS.id = E.category_id AND CS.guid = E.guid)
         AS category,
       (SELECT NS.string FROM rocpd_string NS WHERE NS.id = TR.name_id AND NS.guid = TR.guid)
         AS name,
       TR.nid, P.pid, TH.tid, SA.timestamp, SA.event_id, E.stack_id, E.parent_stack_id,
       E.correlation_id AS corr_id, E.extdata, E.call_stack, E.line_info
FROM rocpd_sample SA
JOIN rocpd_track TR ON TR.id = SA.track_id AND TR.guid = SA.guid
JOIN rocpd_event E ON E.id = SA.event_id AND E.guid = SA.guid
JOIN rocpd_info_process P ON P.id = TR.pid AND P.guid = TR.guid
JOIN rocpd_info_thread TH ON TH.id = TR.tid AND TH.guid = TR.guid;

CREATE VIEW IF NOT EXISTS sample_regions AS
SELECT id, guid, category, name, nid, pid, tid, timestamp AS start, timestamp AS "end",
       0 AS duration, event_id, stack_id, parent_stack_id, corr_id, extdata, call_stack, line_info
FROM samples;

CREATE VIEW IF NOT EXISTS regions_and_samples AS
SELECT * FROM regions
UNION ALL
SELECT * FROM sample_regions;

CREATE VIEW IF NOT EXISTS kernels AS
SELECT K.id, K.guid, T.tid,
       (SELECT CS.string FROM rocpd_string CS WHERE CS.id = E.category_id AND CS.guid = E.guid)
         AS category,
       RN.string AS region, S.display_name AS name, K.nid, P.pid,
       A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
       A.type_index AS agent_type_index, A.type AS agent_type, S.code_object_id, K.kernel_id,
       K.dispatch_id, K.stream_id, K.queue_id, Q.name AS queue, ST.name AS stream, K.start,
       K."end", (K."end" - K.start) AS duration, K.grid_size_x AS grid_x,
       K.grid_size_y AS grid_y, K.grid_size_z AS grid_z, K.workgroup_size_x AS workgroup_x,
       K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
       K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
       S.group_segment_size AS static_lds_size, S.private_segment_size AS static_scratch_size,
       E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
FROM rocpd_kernel_dispatch K
JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
JOIN rocpd_string RN ON RN.id = K.region_name_id AND RN.guid = K.guid
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid
LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
JOIN rocpd_info_process P ON P.id = Q.pid AND P.guid = Q.guid
JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid;

CREATE VIEW IF NOT EXISTS pmc_info AS
SELECT PI.id, PI.guid, PI.nid, P.pid, A.absolute_index AS agent_abs_index, PI.is_constant,
       PI.is_derived, PI.name, PI.description, PI.block, PI.expression
FROM rocpd_info_pmc PI
JOIN rocpd_info_agent A ON A.id = PI.agent_id AND A.guid = PI.guid
JOIN rocpd_info_process P ON P.id = PI.pid AND P.guid = PI.guid;

CREATE VIEW IF NOT EXISTS pmc_events AS
SELECT PE.id, PE.guid, PE.pmc_id, E.id AS event_id,
       (SELECT CS.string FROM rocpd_string CS WHERE CS.id = E.category_id AND CS.guid = E.guid)
         AS category,
       (SELECT KS.display_name FROM rocpd_info_kernel_symbol KS
        WHERE KS.id = K.kernel_id AND KS.guid = K.guid) AS name,
       K.nid, P.pid, K.dispatch_id, K.start, K."end", (K."end" - K.start) AS duration,
       PI.name AS counter_name, PE.value AS counter_value
FROM rocpd_pmc_event PE
JOIN rocpd_info_pmc PI ON PI.id = PE.pmc_id AND PI.guid = PE.guid
JOIN rocpd_event E ON E.id = PE.event_id AND E.guid = PE.guid
JOIN rocpd_kernel_dispatch K ON K.event_id = PE.event_id AND K.guid = PE.guid
JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid;

CREATE VIEW IF NOT EXISTS memory_copies AS
SELECT M.id, M.guid,
       (SELECT CS.string FROM rocpd_string CS WHERE CS.id = E.category_id AND CS.guid = E.guid)
         AS category,
       M.nid, P.pid, T.tid, M.start, M."end", (M."end" - M.start) AS duration, S.string AS name,
       RN.string AS region_name, M.stream_id, M.queue_id, ST.name AS stream_name,
       Q.name AS queue_name, M.size, DA.name AS dst_device,
       DA.absolute_index AS dst_agent_abs_index, DA.logical_index AS dst_agent_log_index,
       DA.type_index AS dst_agent_type_index, DA.type AS dst_agent_type, M.dst_address,
       SA.name AS src_device, SA.absolute_index AS src_agent_abs_index,
       SA.logical_index AS src_agent_log_index, SA.type_index AS src_agent_type_index,
       SA.type AS src_agent_type, M.src_address, E.stack_id, E.parent_stack_id,
       E.correlation_id AS corr_id
FROM rocpd_memory_copy M
JOIN rocpd_string S ON S.id = M.name_id AND S.guid = M.guid
LEFT JOIN rocpd_string RN ON RN.id = M.region_name_id AND RN.guid = M.guid
JOIN rocpd_info_agent DA ON DA.id = M.dst_agent_id AND DA.guid = M.guid
JOIN rocpd_info_agent SA ON SA.id = M.src_agent_id AND SA.guid = M.guid
LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid
JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid;

CREATE VIEW IF NOT EXISTS memory_allocations AS
SELECT M.id, M.guid,
       (SELECT CS.string FROM rocpd_string CS WHERE CS.id = E.category_id AND CS.guid = E.guid)
         AS category,
       M.nid, P.pid, T.tid, M.start, M."end", (M."end" - M.start) AS duration, M.type, M.level,
       A.name AS agent_name, A.absolute_index AS agent_abs_index,
       A.logical_index AS agent_log_index, A.type_index AS agent_type_index,
       A.type AS agent_type, M.address, M.size, M.queue_id, Q.name AS queue_name, M.stream_id,
       ST.name AS stream_name, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
FROM rocpd_memory_allocate M
LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id AND A.guid = M.guid
LEFT JOIN rocpd_info_queue Q ON Q.id = M.queue_id AND Q.guid = M.guid
LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id AND ST.guid = M.guid
JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid;

CREATE VIEW IF NOT EXISTS scratch_memory AS
SELECT M.id, M.guid, M.nid, P.pid, M.type AS operation, A.name AS agent_name,
       A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
       A.type_index AS agent_type_index, A.type AS agent_type, M.queue_id, T.tid,
       JSON_EXTRACT(M.extdata, '$.flags') AS alloc_flags, M.start, M."end",
       (M."end" - M.start) AS duration, M.size, M.address, E.correlation_id, E.stack_id,
       E.parent_stack_id, E.correlation_id AS corr_id,
       (SELECT CS.string FROM rocpd_string CS WHERE CS.id = E.category_id AND CS.guid = E.guid)
         AS category,
       E.extdata AS event_extdata
FROM rocpd_memory_allocate M
LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id AND A.guid = M.guid
JOIN rocpd_event E ON E.id = M.event_id AND E.guid = M.guid
JOIN rocpd_info_process P ON P.id = M.pid AND P.guid = M.guid
JOIN rocpd_info_thread T ON T.id = M.tid AND T.guid = M.guid
WHERE M.level = 'SCRATCH'
ORDER BY M.start ASC;

CREATE VIEW IF NOT EXISTS counters_collection AS
SELECT MIN(PE.id) AS id, PE.guid, K.dispatch_id, K.kernel_id, E.id AS event_id,
       E.correlation_id, E.stack_id, E.parent_stack_id, P.pid, T.tid, K.agent_id,
       A.absolute_index AS agent_abs_index, A.logical_index AS agent_log_index,
       A.type_index AS agent_type_index, A.type AS agent_type, K.queue_id, K.grid_size_x,
       K.grid_size_y, K.grid_size_z, (K.grid_size_x * K.grid_size_y * K.grid_size_z) AS grid_size,
       S.display_name AS kernel_name,
       (SELECT RS.string FROM rocpd_string RS WHERE RS.id = K.region_name_id AND RS.guid = K.guid)
         AS kernel_region,
       K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z,
       (K.workgroup_size_x * K.workgroup_size_y * K.workgroup_size_z) AS workgroup_size,
       K.group_segment_size AS lds_block_size, K.private_segment_size AS scratch_size,
       S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count,
       PI.name AS counter_name, PI.symbol AS counter_symbol, PI.component, PI.description,
       PI.block, PI.expression, PI.value_type, PI.id AS counter_id, SUM(PE.value) AS value,
       K.start, K."end", PI.is_constant, PI.is_derived, (K."end" - K.start) AS duration,
       (SELECT CS.string FROM rocpd_string CS WHERE CS.id = E.category_id AND CS.guid = E.guid)
         AS category,
       K.nid, E.extdata, S.code_object_id
FROM rocpd_pmc_event PE
JOIN rocpd_info_pmc PI ON PI.id = PE.pmc_id AND PI.guid = PE.guid
JOIN rocpd_event E ON E.id = PE.event_id AND E.guid = PE.guid
JOIN rocpd_kernel_dispatch K ON K.event_id = PE.event_id AND K.guid = PE.guid
JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid
GROUP BY PE.guid, K.dispatch_id, PI.name, K.agent_id;
)sql";

// Summary views (ROCm 7.0 summary_views.sql). Durations in top_kernels are microseconds there.
constexpr std::string_view summary_views_sql = R"sql(
CREATE VIEW IF NOT EXISTS top_kernels AS
SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
       (SUM(duration) / COUNT(*)) / 1000.0 AS average,
       SUM(duration) * 100.0 / (SELECT SUM(duration) FROM kernels) AS percentage
FROM kernels
GROUP BY name
ORDER BY total_duration DESC;

CREATE VIEW IF NOT EXISTS busy AS
SELECT A.agent_id, A.type, SUM(A.gpu_time) AS GpuTime, SUM(A.wall_time) AS WallTime,
       SUM(A.gpu_time) * 1.0 / SUM(A.wall_time) AS Busy
FROM (
  SELECT K.agent_id, AG.type, SUM(K."end" - K.start) AS gpu_time,
         (SELECT MAX(X."end") - MIN(X.start) FROM rocpd_kernel_dispatch X) AS wall_time
  FROM rocpd_kernel_dispatch K
  JOIN rocpd_info_agent AG ON AG.id = K.agent_id AND AG.guid = K.guid
  GROUP BY K.agent_id
  UNION ALL
  SELECT M.dst_agent_id AS agent_id, AG.type, SUM(M."end" - M.start) AS gpu_time,
         (SELECT MAX(X."end") - MIN(X.start) FROM rocpd_memory_copy X) AS wall_time
  FROM rocpd_memory_copy M
  JOIN rocpd_info_agent AG ON AG.id = M.dst_agent_id AND AG.guid = M.guid
  GROUP BY M.dst_agent_id
) A
GROUP BY A.agent_id;

CREATE VIEW IF NOT EXISTS top AS
SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
       (SUM(duration) / COUNT(*)) / 1000.0 AS average,
       SUM(duration) * 100.0 / (SELECT SUM(duration) FROM (
         SELECT duration FROM kernels UNION ALL SELECT duration FROM memory_copies
         UNION ALL SELECT duration FROM regions)) AS percentage
FROM (
  SELECT name, duration FROM kernels
  UNION ALL SELECT name, duration FROM memory_copies
  UNION ALL SELECT name, duration FROM regions)
GROUP BY name
ORDER BY total_duration DESC;

CREATE VIEW IF NOT EXISTS kernel_summary AS
SELECT name, calls, "DURATION (nsec)", "SQR (nsec)", "AVERAGE (nsec)", "PERCENT (INC)",
       "MIN (nsec)", "MAX (nsec)",
       ("SQR (nsec)" / calls - "AVERAGE (nsec)" * "AVERAGE (nsec)") AS VARIANCE,
       SQRT(MAX(0.0, "SQR (nsec)" / calls - "AVERAGE (nsec)" * "AVERAGE (nsec)")) AS STD_DEV
FROM (
  SELECT name, COUNT(*) AS calls, SUM(duration) AS "DURATION (nsec)",
         SUM(duration * 1.0 * duration) AS "SQR (nsec)", AVG(duration) AS "AVERAGE (nsec)",
         SUM(duration) * 100.0 / (SELECT SUM(duration) FROM kernels) AS "PERCENT (INC)",
         MIN(duration) AS "MIN (nsec)", MAX(duration) AS "MAX (nsec)"
  FROM kernels
  GROUP BY name)
ORDER BY "DURATION (nsec)" DESC;

CREATE VIEW IF NOT EXISTS kernel_summary_region AS
SELECT region AS name, COUNT(*) AS calls, SUM(duration) AS "DURATION (nsec)",
       AVG(duration) AS "AVERAGE (nsec)",
       SUM(duration) * 100.0 / (SELECT SUM(duration) FROM kernels) AS "PERCENT (INC)",
       MIN(duration) AS "MIN (nsec)", MAX(duration) AS "MAX (nsec)"
FROM kernels
GROUP BY region
ORDER BY "DURATION (nsec)" DESC;

CREATE VIEW IF NOT EXISTS memory_copy_summary AS
SELECT name, COUNT(*) AS calls, SUM(duration) AS "DURATION (nsec)",
       AVG(duration) AS "AVERAGE (nsec)",
       SUM(duration) * 100.0 / (SELECT SUM(duration) FROM memory_copies) AS "PERCENT (INC)",
       MIN(duration) AS "MIN (nsec)", MAX(duration) AS "MAX (nsec)"
FROM memory_copies
GROUP BY name
ORDER BY "DURATION (nsec)" DESC;

CREATE VIEW IF NOT EXISTS memory_allocation_summary AS
SELECT type AS name, COUNT(*) AS calls, SUM(duration) AS "DURATION (nsec)",
       AVG(duration) AS "AVERAGE (nsec)",
       SUM(duration) * 100.0 / (SELECT SUM(duration) FROM memory_allocations) AS "PERCENT (INC)",
       MIN(duration) AS "MIN (nsec)", MAX(duration) AS "MAX (nsec)"
FROM memory_allocations
GROUP BY type
ORDER BY "DURATION (nsec)" DESC;
)sql";

constexpr std::string_view metadata_template = R"sql(
INSERT INTO rocpd_metadata{{uuid}} (tag, value)
VALUES ('schema_version', '3'), ('uuid', '{{uuid}}'), ('guid', '{{guid}}');
)sql";

std::string substitute(std::string_view text, std::string_view uuid_suffix, std::string_view guid) {
  std::string out;
  out.reserve(text.size() + 64 * 40);
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    out.append(text.substr(pos, open - pos));
    if (text.substr(open, 8) == "{{uuid}}") {
      out.append(uuid_suffix);
      pos = open + 8;
    } else if (text.substr(open, 8) == "{{guid}}") {
      out.append(guid);
      pos = open + 8;
    } else {
      out.append("{{");
      pos = open + 2;
    }
  }
  return out;
}

// Quotes inside the uuid or guid would break the generated SQL; both come from our own generator or
// from a caller's rocprofv3-style id, which never contains them.
void check_identifier(std::string_view text, const char* what) {
  for (const char c : text) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_' || c == '-';
    if (!ok) {
      throw rocpd_error(std::string("rocpd schema: ") + what + " '" + std::string(text) +
                        "' holds a character other than letters, digits, '_' and '-'; fix: pass a "
                        "UUID such as 0197abcd-1234-7abc-8def-0123456789ab");
    }
  }
}

} // namespace

std::string rocpd_tables_sql(std::string_view uuid_suffix, std::string_view guid) {
  check_identifier(uuid_suffix, "uuid suffix");
  check_identifier(guid, "guid");
  return substitute(tables_template, uuid_suffix, guid);
}

std::string rocpd_views_sql(std::string_view uuid_suffix) {
  check_identifier(uuid_suffix, "uuid suffix");
  std::string out;
  for (const std::string_view table : table_names) {
    if (uuid_suffix.empty()) {
      break;
    }
    out += "CREATE VIEW IF NOT EXISTS ";
    out += table;
    out += " AS SELECT * FROM ";
    out += table;
    out += uuid_suffix;
    out += ";\n";
  }
  out += data_views_sql;
  out += summary_views_sql;
  return out;
}

std::string rocpd_schema_sql(std::string_view uuid_suffix, std::string_view guid) {
  std::string out = rocpd_tables_sql(uuid_suffix, guid);
  out += rocpd_views_sql(uuid_suffix);
  out += substitute(metadata_template, uuid_suffix, guid);
  return out;
}

} // namespace rpl::stages::rocpd
