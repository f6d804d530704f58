#pragma once
/// The msgpack adaptors of the wire types (messages/wire.hpp, messages/kernel_lane.hpp), apart
/// from the structs so that code which only names the types does not parse msgpack. Included by
/// messages/codec.hpp and whoever packs or unpacks a wire type directly.
///
/// Each struct is a msgpack map keyed by field name, in the order listed here; this is exactly what
/// MSGPACK_DEFINE_MAP inside the struct produced, so the bytes on the wire are unchanged. Enums
/// travel as their underlying integer (MSGPACK_ADD_ENUM). docs/protocol.md is the contract: a
/// field is added at the end of its list, and never renamed.

#include <msgpack.hpp>

#include "messages/kernel_lane.hpp"
#include "messages/proposal.hpp"
#include "messages/wire.hpp"

/// `(key)(value.field)` for each field: the arguments of msgpack::type::make_define_map.
#define RPL_MSGPACK_FIELD(r, value, field) (MSGPACK_PP_STRINGIZE(field))(value.field)
#define RPL_MSGPACK_FIELDS(value, ...)                                                             \
  MSGPACK_PP_SEQ_TO_TUPLE(                                                                         \
      MSGPACK_PP_SEQ_FOR_EACH(RPL_MSGPACK_FIELD, value, MSGPACK_PP_VARIADIC_TO_SEQ(__VA_ARGS__)))

/// The non-intrusive equivalent of MSGPACK_DEFINE_MAP(fields...) inside `wire_type`; used in the
/// global namespace, like MSGPACK_ADD_ENUM. Every operator is a template, so a translation unit
/// instantiates only the adaptors it uses (msgpack passes msgpack::object, object::with_zone).
#define RPL_MSGPACK_MAP(wire_type, ...)                                                            \
  namespace msgpack {                                                                              \
  MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {                                          \
    namespace adaptor {                                                                            \
    template <> struct convert<wire_type> {                                                        \
      template <typename Object> Object const& operator()(Object const& o, wire_type& v) const {   \
        msgpack::type::make_define_map RPL_MSGPACK_FIELDS(v, __VA_ARGS__).msgpack_unpack(o);       \
        return o;                                                                                  \
      }                                                                                            \
    };                                                                                             \
    template <> struct pack<wire_type> {                                                           \
      template <typename Stream>                                                                   \
      msgpack::packer<Stream>& operator()(msgpack::packer<Stream>& o, wire_type const& v) const {  \
        msgpack::type::make_define_map RPL_MSGPACK_FIELDS(v, __VA_ARGS__).msgpack_pack(o);         \
        return o;                                                                                  \
      }                                                                                            \
    };                                                                                             \
    template <> struct object_with_zone<wire_type> {                                               \
      template <typename WithZone> void operator()(WithZone& o, wire_type const& v) const {        \
        msgpack::type::make_define_map RPL_MSGPACK_FIELDS(v, __VA_ARGS__)                          \
            .msgpack_object(static_cast<msgpack::object*>(&o), o.zone);                            \
      }                                                                                            \
    };                                                                                             \
    }                                                                                              \
  }                                                                                                \
  }

// messages/kernel_lane.hpp

MSGPACK_ADD_ENUM(rpl::messages::element_type)
MSGPACK_ADD_ENUM(rpl::messages::kernel_arg_kind)
MSGPACK_ADD_ENUM(rpl::messages::buffer_fill)
MSGPACK_ADD_ENUM(rpl::messages::kernel_lane_status)

RPL_MSGPACK_MAP(rpl::messages::buffer_init, fill, seed, min, max, path)
RPL_MSGPACK_MAP(rpl::messages::value_tolerance, abs, rel)
RPL_MSGPACK_MAP(rpl::messages::kernel_arg,
                name,
                kind,
                type,
                count,
                init,
                output,
                tolerance,
                nondeterministic,
                int_value,
                float_value)
RPL_MSGPACK_MAP(rpl::messages::launch_dims, x, y, z)
RPL_MSGPACK_MAP(
    rpl::messages::kernel_reference, code_object_path, symbol, grid, block, shared_bytes)
RPL_MSGPACK_MAP(rpl::messages::kernel_launch,
                symbol,
                grid,
                block,
                shared_bytes,
                args,
                reference,
                offset_bytes,
                strict)
RPL_MSGPACK_MAP(rpl::messages::kernel_sampling,
                warmup_launches,
                min_samples,
                max_samples,
                time_cap_ms,
                max_noise,
                min_time_ns,
                race_bound_ns,
                race_noise,
                race_confidence,
                spot_checks,
                spot_seed)
RPL_MSGPACK_MAP(
    rpl::messages::kernel_device, api, ordinal, name, uuid, arch, sm_clock_khz, memory_bytes)
RPL_MSGPACK_MAP(rpl::messages::kernel_lane_hello, protocol, pid, status, error_name, reason, device)
RPL_MSGPACK_MAP(rpl::messages::kernel_lane_request,
                protocol,
                sequence,
                candidate_key,
                code_object_path,
                launch,
                sampling)
RPL_MSGPACK_MAP(rpl::messages::kernel_mismatch, buffer, index, value, expected, count, compared)
RPL_MSGPACK_MAP(rpl::messages::kernel_red_zone_violation, buffer, side, offset, changed, phase)
RPL_MSGPACK_MAP(rpl::messages::kernel_lane_reply,
                protocol,
                sequence,
                status,
                error_name,
                reason,
                samples_ns,
                warmup_launches,
                verified,
                time_capped,
                mismatch,
                violation,
                red_zones,
                red_zone_ns,
                spot_samples_ns,
                device,
                lane_exiting,
                allocations,
                setup_ns,
                sampling_ns,
                sampling_state,
                noise,
                noisy,
                interval_low_ns,
                interval_high_ns,
                load_ns,
                restore_ns,
                check_ns,
                module_cached)

// messages/wire.hpp

MSGPACK_ADD_ENUM(rpl::messages::message_kind)
MSGPACK_ADD_ENUM(rpl::messages::compile_status)
MSGPACK_ADD_ENUM(rpl::messages::measure_status)
MSGPACK_ADD_ENUM(rpl::messages::verdict_kind)

RPL_MSGPACK_MAP(rpl::messages::envelope, version, kind, job_id, run_id)
RPL_MSGPACK_MAP(rpl::messages::toolchain, name, path, version, hash, id)
RPL_MSGPACK_MAP(rpl::messages::ready,
                service,
                worker_id,
                host,
                pid,
                compilers,
                heartbeat_ms,
                cores,
                memory_available_bytes,
                slots,
                toolchains)
RPL_MSGPACK_MAP(rpl::messages::heartbeat, sequence)
RPL_MSGPACK_MAP(rpl::messages::disconnect, reason)
RPL_MSGPACK_MAP(rpl::messages::source_file, name, content)
RPL_MSGPACK_MAP(rpl::messages::compile_request,
                sources,
                argv,
                toolchain_id,
                deadline_ms,
                max_output_bytes,
                match_toolchain,
                max_artifact_bytes,
                chunk_bytes,
                space_index)
RPL_MSGPACK_MAP(rpl::messages::kernel_resource_usage,
                name,
                arch,
                registers,
                barriers,
                shared_bytes,
                local_bytes,
                stack_bytes,
                spill_store_bytes,
                spill_load_bytes)
RPL_MSGPACK_MAP(rpl::messages::compile_reply,
                status,
                exit_code,
                term_signal,
                output,
                artifact,
                has_artifact,
                compile_ns,
                worker_id,
                error,
                resources,
                artifact_bytes,
                artifact_chunks)
RPL_MSGPACK_MAP(rpl::messages::artifact_chunk, offset, bytes)
RPL_MSGPACK_MAP(rpl::messages::measure_request,
                candidate_key,
                argv,
                runs,
                warmup,
                timeout_ms,
                launch,
                fixed_count,
                spot_checks)
RPL_MSGPACK_MAP(rpl::messages::gpu_clocks,
                read,
                sm_mhz_before,
                sm_mhz_after,
                reasons_before,
                reasons_after,
                power_violation_ns,
                thermal_violation_ns,
                throttled)
RPL_MSGPACK_MAP(rpl::messages::measure_result,
                status,
                samples_ns,
                exit_code,
                term_signal,
                failed_run,
                reason,
                lane,
                sampling,
                noise,
                noisy,
                device_model,
                device_uuid,
                clocks,
                leftover_processes,
                interval_low_ns,
                interval_high_ns,
                race_bound_ns,
                finding)
RPL_MSGPACK_MAP(
    rpl::messages::verdict, candidate_key, decision, reason, best_key, median_ns, relative_change)

// messages/proposal.hpp

MSGPACK_ADD_ENUM(rpl::messages::propose_status)

RPL_MSGPACK_MAP(rpl::messages::proposal_attempt, proposal_id, title, diff, stage, verdict, detail)
RPL_MSGPACK_MAP(rpl::messages::propose_request,
                kernel,
                source_name,
                source,
                language,
                compile_flags,
                block_threads,
                analysis,
                history,
                repair_round,
                max_proposals,
                timeout_ms)
RPL_MSGPACK_MAP(rpl::messages::tunable_macro, name, values, default_value)
RPL_MSGPACK_MAP(rpl::messages::proposal, id, title, rationale, diff, tunables)
RPL_MSGPACK_MAP(
    rpl::messages::propose_reply, status, proposer, worker_id, error, proposals, elapsed_ns, notes)
