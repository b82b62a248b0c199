#include "gpu/cuda_checkpoint.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>

#include "base/file_io.h"

namespace infervisor {

namespace {

// The few driver API types the calls need, as cuda.h declares them (CUDA
// 12.8; pinned below). CUresult is an int-sized enum; 0 is CUDA_SUCCESS.
using CUresult = int;
constexpr CUresult kCudaSuccess = 0;

struct CudaLockArgs {
    unsigned int timeout_ms;  // 0: no timeout
    unsigned int reserved0;
    std::uint64_t reserved1[7];
};
static_assert(sizeof(CudaLockArgs) == 64, "CUcheckpointLockArgs is 64 bytes");

using InitFn = CUresult (*)(unsigned int);
using ErrorTextFn = CUresult (*)(CUresult, const char**);
using GetStateFn = CUresult (*)(int, int*);
using LockFn = CUresult (*)(int, CudaLockArgs*);
// Checkpoint, Restore and Unlock take optional argument structs: null.
using PidFn = CUresult (*)(int, void*);

// libcuda, loaded for the helper's one action. Never unloaded: the helper
// exits right after (libcuda's threads make dlclose unsafe anyway).
struct CudaDriver {
    InitFn init = nullptr;
    ErrorTextFn error_name = nullptr;    // optional
    ErrorTextFn error_string = nullptr;  // optional
    GetStateFn get_state = nullptr;
    LockFn lock = nullptr;
    PidFn checkpoint = nullptr;
    PidFn restore = nullptr;
    PidFn unlock = nullptr;

    // "cuCheckpointProcessLock: CUDA_ERROR_NOT_SUPPORTED: operation not supported"
    std::string describe(const char* call, CUresult r) const {
        std::string out = std::string(call) + ": ";
        const char* text = nullptr;
        if (error_name && error_name(r, &text) == kCudaSuccess && text)
            out += text;
        else
            out += "CUresult " + std::to_string(r);
        text = nullptr;
        if (error_string && error_string(r, &text) == kCudaSuccess && text)
            out += std::string(": ") + text;
        return out;
    }
};

template <typename Fn>
Fn symbol(void* handle, const char* name) {
    return reinterpret_cast<Fn>(::dlsym(handle, name));
}

// Loads `library` and resolves the calls; the error says which is missing.
Result<CudaDriver> load_driver(const std::string& library) {
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = ::dlerror();
        return plain_error("cannot load " + library + ": " + (why ? why : "dlopen failed") +
                           " (no NVIDIA driver on this host?)");
    }
    CudaDriver d;
    d.init = symbol<InitFn>(handle, "cuInit");
    d.error_name = symbol<ErrorTextFn>(handle, "cuGetErrorName");
    d.error_string = symbol<ErrorTextFn>(handle, "cuGetErrorString");
    d.get_state = symbol<GetStateFn>(handle, "cuCheckpointProcessGetState");
    d.lock = symbol<LockFn>(handle, "cuCheckpointProcessLock");
    d.checkpoint = symbol<PidFn>(handle, "cuCheckpointProcessCheckpoint");
    d.restore = symbol<PidFn>(handle, "cuCheckpointProcessRestore");
    d.unlock = symbol<PidFn>(handle, "cuCheckpointProcessUnlock");
    if (!d.init) return plain_error(library + " has no cuInit: not a CUDA driver library");
    if (!d.get_state || !d.lock || !d.checkpoint || !d.restore || !d.unlock)
        return plain_error(library +
                           " has no cuCheckpointProcess* calls: GPU release needs the CUDA "
                           "checkpoint API of NVIDIA driver 570 or later");
    if (CUresult r = d.init(0); r != kCudaSuccess) return plain_error(d.describe("cuInit", r));
    return d;
}

CudaProcessState state_from(int value) {
    if (value < 0 || value > static_cast<int>(CudaProcessState::restoring))
        return CudaProcessState::unknown;
    return static_cast<CudaProcessState>(value);
}

// The state of `pid` as the driver knows it; nullopt when it is not a CUDA
// process (the driver does not know it) or cannot be asked.
std::optional<CudaProcessState> state_of(const CudaDriver& d, pid_t pid) {
    int state = -1;
    if (d.get_state(static_cast<int>(pid), &state) != kCudaSuccess) return std::nullopt;
    return state_from(state);
}

CudaProcessState current_state(const CudaDriver& d, pid_t pid) {
    return state_of(d, pid).value_or(CudaProcessState::unknown);
}

std::string count_text(size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

CudaCheckpointAnswer release(const CudaDriver& d, const std::vector<pid_t>& pids,
                             std::chrono::milliseconds lock_timeout) {
    CudaCheckpointAnswer answer;
    auto& procs = answer.processes;
    for (pid_t pid : pids)
        if (auto state = state_of(d, pid)) procs.push_back({pid, *state, *state, {}});
    if (procs.empty()) {
        answer.detail =
            "no CUDA process among its " + count_text(pids.size(), "process", "processes");
        return answer;
    }
    // Refuse at once what cannot be released: a process in the middle of
    // another checkpoint, or failed.
    for (auto& p : procs) {
        if (p.before == CudaProcessState::running || p.before == CudaProcessState::checkpointed)
            continue;
        p.error = std::string("in state ") + cuda_process_state_name(p.before);
        answer.detail = "process " + std::to_string(p.pid) + " is " +
                        cuda_process_state_name(p.before) + ": not released";
        return answer;
    }
    CudaLockArgs args{};
    args.timeout_ms = static_cast<unsigned>(lock_timeout.count());
    std::string failure;
    size_t locked = 0;
    for (; locked < procs.size(); ++locked) {
        auto& p = procs[locked];
        if (p.before != CudaProcessState::running) continue;
        if (CUresult r = d.lock(static_cast<int>(p.pid), &args); r != kCudaSuccess) {
            p.error = d.describe("cuCheckpointProcessLock", r);
            failure = "process " + std::to_string(p.pid) + ": " + p.error;
            break;
        }
    }
    size_t checkpointed = 0;
    if (failure.empty()) {
        for (; checkpointed < procs.size(); ++checkpointed) {
            auto& p = procs[checkpointed];
            if (p.before != CudaProcessState::running) continue;
            if (CUresult r = d.checkpoint(static_cast<int>(p.pid), nullptr); r != kCudaSuccess) {
                p.error = d.describe("cuCheckpointProcessCheckpoint", r);
                failure = "process " + std::to_string(p.pid) + ": " + p.error;
                break;
            }
        }
    }
    if (!failure.empty()) {
        // Undo: what this call checkpointed is restored, what it locked
        // unlocked; the processes run on as before.
        std::string undo;
        for (size_t i = 0; i < procs.size(); ++i) {
            auto& p = procs[i];
            if (p.before != CudaProcessState::running) continue;
            bool was_checkpointed = i < checkpointed;
            bool was_locked = i < locked;  // the one whose lock failed is not
            if (was_checkpointed)
                if (CUresult r = d.restore(static_cast<int>(p.pid), nullptr); r != kCudaSuccess)
                    undo += "; process " + std::to_string(p.pid) +
                            " not restored: " + d.describe("cuCheckpointProcessRestore", r);
            if (was_locked || was_checkpointed)
                if (CUresult r = d.unlock(static_cast<int>(p.pid), nullptr); r != kCudaSuccess)
                    undo += "; process " + std::to_string(p.pid) +
                            " not unlocked: " + d.describe("cuCheckpointProcessUnlock", r);
            p.after = current_state(d, p.pid);
        }
        answer.detail = failure + (undo.empty() ? "; undone, the processes run on" : undo);
        return answer;
    }
    for (auto& p : procs) p.after = current_state(d, p.pid);
    answer.ok = true;
    answer.detail = "GPU memory of " + count_text(procs.size(), "CUDA process", "CUDA processes") +
                    " moved to host memory";
    return answer;
}

CudaCheckpointAnswer restore(const CudaDriver& d, const std::vector<pid_t>& pids) {
    CudaCheckpointAnswer answer;
    std::string failures;
    size_t acted = 0;
    for (pid_t pid : pids) {
        auto state = state_of(d, pid);
        if (!state) continue;
        CudaProcessOutcome p{pid, *state, *state, {}};
        if (p.before == CudaProcessState::checkpointed) {
            ++acted;
            if (CUresult r = d.restore(static_cast<int>(pid), nullptr); r != kCudaSuccess)
                p.error = d.describe("cuCheckpointProcessRestore", r);
        }
        if (p.error.empty() &&
            (p.before == CudaProcessState::checkpointed || p.before == CudaProcessState::locked)) {
            if (p.before == CudaProcessState::locked) ++acted;
            if (CUresult r = d.unlock(static_cast<int>(pid), nullptr); r != kCudaSuccess)
                p.error = d.describe("cuCheckpointProcessUnlock", r);
        }
        p.after = current_state(d, pid);
        if (!p.error.empty())
            failures += (failures.empty() ? "" : "; ") + ("process " + std::to_string(pid) + ": ") +
                        p.error;
        answer.processes.push_back(std::move(p));
    }
    answer.ok = failures.empty();
    if (!answer.ok)
        answer.detail = failures;
    else if (acted == 0)
        answer.detail = answer.processes.empty() ? "no CUDA process to restore"
                                                 : "its CUDA processes were running already";
    else
        answer.detail =
            "GPU memory of " + count_text(acted, "CUDA process", "CUDA processes") + " restored";
    return answer;
}

// One line of free text: no newline, bounded.
std::string one_line(std::string_view text) {
    std::string out(text.substr(0, 900));
    for (char& c : out)
        if (c == '\n' || c == '\r') c = ' ';
    return out;
}

std::optional<CudaProcessState> state_named(std::string_view name) {
    for (int i = 0; i <= static_cast<int>(CudaProcessState::unknown); ++i) {
        auto s = static_cast<CudaProcessState>(i);
        if (name == cuda_process_state_name(s)) return s;
    }
    return std::nullopt;
}

// The next space-separated word of `rest`, consumed.
std::string_view next_word(std::string_view& rest) {
    size_t end = rest.find(' ');
    std::string_view word = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    return word;
}

template <typename T>
std::optional<T> number(std::string_view text) {
    T value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return value;
}

}  // namespace

const char* cuda_checkpoint_action_name(CudaCheckpointAction action) {
    return action == CudaCheckpointAction::release ? "release" : "restore";
}

const char* cuda_process_state_name(CudaProcessState state) {
    switch (state) {
        case CudaProcessState::running:
            return "running";
        case CudaProcessState::locked:
            return "locked";
        case CudaProcessState::checkpointed:
            return "checkpointed";
        case CudaProcessState::failed:
            return "failed";
        case CudaProcessState::checkpointing:
            return "checkpointing";
        case CudaProcessState::restoring:
            return "restoring";
        case CudaProcessState::unknown:
            break;
    }
    return "unknown";
}

CudaCheckpointAnswer run_cuda_checkpoint(const std::string& library, CudaCheckpointAction action,
                                         const std::vector<pid_t>& pids,
                                         std::chrono::milliseconds lock_timeout) {
    auto driver = load_driver(library);
    if (!driver) return {false, driver.error().message(), {}};
    return action == CudaCheckpointAction::release ? release(*driver, pids, lock_timeout)
                                                   : restore(*driver, pids);
}

// "result ok|failed DETAIL", then per process "pid PID BEFORE AFTER[ ERROR]".
std::string format_cuda_checkpoint_answer(const CudaCheckpointAnswer& answer) {
    std::string out = std::string("result ") + (answer.ok ? "ok" : "failed") + " " +
                      one_line(answer.detail) + "\n";
    for (const auto& p : answer.processes) {
        out += "pid " + std::to_string(p.pid) + " " + cuda_process_state_name(p.before) + " " +
               cuda_process_state_name(p.after);
        if (!p.error.empty()) out += " " + one_line(p.error);
        out += "\n";
    }
    return out;
}

Result<CudaCheckpointAnswer> parse_cuda_checkpoint_answer(std::string_view text) {
    CudaCheckpointAnswer answer;
    bool have_result = false;
    size_t line_no = 0;
    while (!text.empty()) {
        size_t end = text.find('\n');
        if (end == std::string_view::npos) return plain_error("the answer's last line is cut off");
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end + 1);
        ++line_no;
        auto bad = [&](const std::string& why) {
            return plain_error("answer line " + std::to_string(line_no) + ": " + why);
        };
        if (line.size() > 1024) return bad("longer than 1024 bytes");
        std::string_view rest = line;
        std::string_view kind = next_word(rest);
        if (line_no == 1) {
            if (kind != "result") return bad("expected 'result'");
            std::string_view verdict = next_word(rest);
            if (verdict != "ok" && verdict != "failed") return bad("expected ok or failed");
            answer.ok = verdict == "ok";
            answer.detail = std::string(rest);
            have_result = true;
            continue;
        }
        if (kind != "pid") return bad("expected 'pid'");
        if (answer.processes.size() >= kMaxCudaProcesses)
            return bad("more than " + std::to_string(kMaxCudaProcesses) + " processes");
        auto pid = number<pid_t>(next_word(rest));
        auto before = state_named(next_word(rest));
        auto after = state_named(next_word(rest));
        if (!pid || *pid <= 0) return bad("not a process id");
        if (!before || !after) return bad("not a CUDA process state");
        answer.processes.push_back({*pid, *before, *after, std::string(rest)});
    }
    if (!have_result) return plain_error("empty answer");
    return answer;
}

int cuda_checkpoint_helper_main(const std::vector<std::string_view>& args, int answer_fd) {
    // LIBRARY ACTION TIMEOUT_MS PID...
    if (args.size() < 4) return 2;
    std::string library(args[0]);
    CudaCheckpointAction action;
    if (args[1] == "release")
        action = CudaCheckpointAction::release;
    else if (args[1] == "restore")
        action = CudaCheckpointAction::restore;
    else
        return 2;
    auto timeout_ms = number<unsigned>(args[2]);
    if (!timeout_ms) return 2;
    std::vector<pid_t> pids;
    for (size_t i = 3; i < args.size(); ++i) {
        auto pid = number<pid_t>(args[i]);
        if (!pid || *pid <= 0) return 2;
        pids.push_back(*pid);
    }
    if (pids.size() > kMaxCudaProcesses) return 2;
    CudaCheckpointAnswer answer =
        run_cuda_checkpoint(library, action, pids, std::chrono::milliseconds(*timeout_ms));
    if (!write_all(answer_fd, format_cuda_checkpoint_answer(answer))) return 1;
    return answer.ok ? 0 : 1;
}

}  // namespace infervisor
