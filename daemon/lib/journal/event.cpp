#include "journal/event.h"

#include <syslog.h>

namespace infervisor {

namespace {

struct KindInfo {
    EventKind kind;
    const char* name;
    const char* message_id;
    int priority;
};

// MESSAGE_IDs are stable API: journal catalogs and users' filters use them.
constexpr KindInfo kKinds[] = {
    {EventKind::started, "started", "49af6f06d2a446dd9d95dbde24ddfed4", LOG_INFO},
    {EventKind::ready, "ready", "a7e637663751456f95f17a1b9cfa3d6e", LOG_INFO},
    {EventKind::exited, "exited", "3c522bde54484e4884fa081dc0e62db4", LOG_NOTICE},
    {EventKind::oom_killed, "oom-killed", "56f8c4b0987c47828ffc30ed761a3b5e", LOG_WARNING},
    {EventKind::restarting, "restarting", "f5ec5743703e4b2680236447a234cf4c", LOG_NOTICE},
    {EventKind::failed, "failed", "bc6226da57e64b7a9175c6a4d81d056e", LOG_ERR},
    {EventKind::parked, "parked", "6c8964796b4f41478c643a82d47d73b5", LOG_WARNING},
    {EventKind::stopped, "stopped", "0e88a22c78c844eea7860b9475bf95c3", LOG_INFO},
    {EventKind::stop_escalated, "stop-escalated", "29c02689fcb44a049f0d3014ee91b149", LOG_WARNING},
    {EventKind::leftover_reaped, "leftover-reaped", "032bcfda244e4c99885921f5693a33f9",
     LOG_WARNING},
    {EventKind::start_failed, "start-failed", "1bcce1697bbb4784a8d4736d755776b6", LOG_ERR},
    {EventKind::config_reloaded, "config-reloaded", "2bec45290efb44bfac75bec596b762a0", LOG_INFO},
    {EventKind::config_rejected, "config-rejected", "c8a6afee76594c2aba1604cd6242ba97", LOG_ERR},
    {EventKind::policy_action, "policy-action", "8759a115346444129935fb970b611721", LOG_WARNING},
    {EventKind::notify_rejected, "notify-rejected", "7d65700f528a41c899142a2338fcb6cb",
     LOG_WARNING},
    {EventKind::workdir_over_quota, "workdir-over-quota", "08fec7bb86c94733b9ea9d8decb9881a",
     LOG_WARNING},
    {EventKind::protected_entry_deleted, "protected-entry-deleted",
     "68c3145eca334cfaa02b87f8600040d4", LOG_WARNING},
    {EventKind::workdir_removed, "workdir-removed", "3c45a0bec8ef4c1eaa168207e93640c6", LOG_NOTICE},
    {EventKind::start_delayed, "start-delayed", "720d3d9439ae46278cd8d28226a993a2", LOG_WARNING},
    {EventKind::probe_changed, "probe-changed", "5380014a57bc4d6d8ea164c2c26e55ad", LOG_NOTICE},
    {EventKind::probe_failed, "probe-failed", "5704e40278bb4ef592be557c00e373da", LOG_WARNING},
    {EventKind::daemon_started, "daemon-started", "01eabb2763044f49bcc0623199875ec2", LOG_INFO},
    {EventKind::checkpoint_written, "checkpoint-written", "5b0719316cd545b4bdc5b05e388716f7",
     LOG_NOTICE},
    {EventKind::checkpoint_failed, "checkpoint-failed", "a3b5d7697570464b90f77d20e5ec6c9d",
     LOG_WARNING},
    {EventKind::checkpoint_restoring, "checkpoint-restoring", "66f34bfe75a64ccc9e37652c4a585422",
     LOG_INFO},
    {EventKind::checkpoint_restored, "checkpoint-restored", "4a7afb6c20ef4a25a7c70530925acdc2",
     LOG_INFO},
    {EventKind::checkpoint_retired, "checkpoint-retired", "3de4b26af662444eb5929b3e448b81db",
     LOG_NOTICE},
    {EventKind::restart_waiting_for_memory, "restart-waiting-for-memory",
     "5b1e0c36a8f94d2c9e7f41b3d6a2c870", LOG_WARNING},
    {EventKind::suspended, "suspended", "9f28f14a0a034a1ab1c1a02c864347c0", LOG_NOTICE},
    {EventKind::resumed, "resumed", "d45750d132884c3ab2e6cc2272fb6a7c", LOG_NOTICE},
    {EventKind::waiting, "waiting", "8bd235c2a8f8448ba8cb08fb41a081e8", LOG_NOTICE},
    {EventKind::admitted, "admitted", "71edda54a9264577b920ac8bf6746854", LOG_INFO},
    {EventKind::daemon_stopping, "daemon-stopping", "b62b1e279ae448b9aa52d7d12bdbb927", LOG_INFO},
    {EventKind::adopted, "adopted", "1b17809b4dda4292b509d5e398fe4796", LOG_NOTICE},
    {EventKind::tmp_file_protected, "tmp-file-protected", "38c0e33ec3d545ab988cb0439bca7efe",
     LOG_INFO},
    {EventKind::watchdog_learned, "watchdog-learned", "e50cc6a9608d42728be088f7699a0a6b",
     LOG_NOTICE},
    {EventKind::usage_capped, "usage-capped", "e628e1f54cdc496b9945130a96e7f890", LOG_WARNING},
    {EventKind::checkpoint_deleted, "checkpoint-deleted", "0c7d2a4f9e1b4b56a3e8d61f27c95b03",
     LOG_NOTICE},
    {EventKind::engine_series_absent, "engine-series-absent", "7c80720f0fa445b19ee1b4b21c18d2e8",
     LOG_WARNING},
    {EventKind::models_unloaded, "models-unloaded", "a5cf527b5a844c9f89c8816187b64f1f", LOG_NOTICE},
    {EventKind::engine_metrics_failed, "engine-metrics-failed", "be335c05629d421cb52cbb9acc0e63d2",
     LOG_WARNING},
    {EventKind::gpu_fault, "gpu-fault", "e80993043914425b9ad3e9c1fb38cadc", LOG_ERR},
    {EventKind::gpu_recovered, "gpu-recovered", "f37af8a1416a4103b6a0ccc75c0d30eb", LOG_NOTICE},
    {EventKind::gpu_xid, "gpu-xid", "3e97bb91ccb54535b372192e7a1d3db2", LOG_WARNING},
};

const KindInfo& info(EventKind kind) {
    for (const auto& k : kKinds)
        if (k.kind == kind) return k;
    return kKinds[0];
}

}  // namespace

std::string_view event_name(EventKind kind) { return info(kind).name; }
std::string_view event_message_id(EventKind kind) { return info(kind).message_id; }
int event_priority(EventKind kind) { return info(kind).priority; }

}  // namespace infervisor
