// A stand-in libcuda for the tests of GPU release (gpu/cuda_checkpoint.h,
// supervise/worker_gpu_release.h): cuInit, cuGetErrorName, cuGetErrorString
// and the five cuCheckpointProcess* calls, acting on a state file instead of
// a GPU. Each helper run is a new process, so the state lives in a file: the
// library's own path (dladdr) with ".state" appended — a test copies the
// built library into its temporary directory and gets a state of its own.
// Every call is appended to the library's path + ".calls" ("lock 41\n"), so
// that a test can assert what was asked, in which order.
//
// State lines ('#' starts a comment):
//   PID STATE            a CUDA process; STATE is running, locked,
//                        checkpointed or failed (a pid not listed is not a
//                        CUDA process: GetState answers CUDA_ERROR_NOT_FOUND)
//   fail CALL PID CODE   CALL (lock, checkpoint, restore, unlock) on PID
//                        answers CODE and changes nothing
//   init_fails CODE      cuInit answers CODE
// The state machine is the driver's: lock running -> locked, checkpoint
// locked -> checkpointed, restore checkpointed -> locked, unlock locked ->
// running; any other transition answers CUDA_ERROR_ILLEGAL_STATE (401).
// Plain C ABI; no exception leaves an entry point.
#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using CUresult = int;
constexpr CUresult kSuccess = 0;
constexpr CUresult kNotFound = 500;
constexpr CUresult kIllegalState = 401;
constexpr CUresult kInvalidValue = 1;

struct LockArgs {
    unsigned int timeout_ms;
    unsigned int reserved0;
    unsigned long long reserved1[7];
};
static_assert(sizeof(LockArgs) == 64);

struct State {
    std::map<int, std::string> processes;  // pid -> state
    std::map<std::pair<std::string, int>, int> failures;
    int init_fails = 0;
};

std::string library_path() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&library_path), &info) == 0 || !info.dli_fname) return {};
    return info.dli_fname;
}

State load() {
    State s;
    std::ifstream in(library_path() + ".state");
    std::string line;
    while (std::getline(in, line)) {
        if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        std::istringstream words(line);
        std::string first;
        if (!(words >> first)) continue;
        if (first == "fail") {
            std::string call;
            int pid = 0, code = 0;
            words >> call >> pid >> code;
            s.failures[{call, pid}] = code;
        } else if (first == "init_fails") {
            words >> s.init_fails;
        } else {
            std::string state;
            words >> state;
            s.processes[std::stoi(first)] = state;
        }
    }
    return s;
}

void save(const State& s) {
    std::ofstream out(library_path() + ".state", std::ios::trunc);
    for (const auto& [key, code] : s.failures)
        out << "fail " << key.first << " " << key.second << " " << code << "\n";
    if (s.init_fails) out << "init_fails " << s.init_fails << "\n";
    for (const auto& [pid, state] : s.processes) out << pid << " " << state << "\n";
}

void record(const std::string& call, int pid) {
    std::ofstream out(library_path() + ".calls", std::ios::app);
    out << call << " " << pid << "\n";
}

// One transition: `from` -> `to` for `call` on `pid`.
CUresult transition(const char* call, int pid, const char* from, const char* to) {
    try {
        record(call, pid);
        State s = load();
        if (auto f = s.failures.find({call, pid}); f != s.failures.end()) return f->second;
        auto p = s.processes.find(pid);
        if (p == s.processes.end()) return kNotFound;
        if (p->second != from) return kIllegalState;
        p->second = to;
        save(s);
        return kSuccess;
    } catch (...) {
        return kInvalidValue;
    }
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
    if (flags != 0) return kInvalidValue;
    try {
        return load().init_fails;
    } catch (...) {
        return kInvalidValue;
    }
}

CUresult cuGetErrorName(CUresult error, const char** text) {
    switch (error) {
        case kSuccess:
            *text = "CUDA_SUCCESS";
            return kSuccess;
        case kInvalidValue:
            *text = "CUDA_ERROR_INVALID_VALUE";
            return kSuccess;
        case kIllegalState:
            *text = "CUDA_ERROR_ILLEGAL_STATE";
            return kSuccess;
        case kNotFound:
            *text = "CUDA_ERROR_NOT_FOUND";
            return kSuccess;
        case 2:
            *text = "CUDA_ERROR_OUT_OF_MEMORY";
            return kSuccess;
        case 801:
            *text = "CUDA_ERROR_NOT_SUPPORTED";
            return kSuccess;
        case 909:
            *text = "CUDA_ERROR_TIMEOUT";
            return kSuccess;
        default:
            *text = nullptr;
            return kInvalidValue;
    }
}

CUresult cuGetErrorString(CUresult error, const char** text) {
    switch (error) {
        case 2:
            *text = "out of memory";
            return kSuccess;
        case 909:
            *text = "the lock timed out";
            return kSuccess;
        default:
            return cuGetErrorName(error, text);
    }
}

CUresult cuCheckpointProcessGetState(int pid, int* state) {
    try {
        record("get_state", pid);
        State s = load();
        auto p = s.processes.find(pid);
        if (p == s.processes.end()) return kNotFound;
        static const std::vector<std::string> names = {"running", "locked", "checkpointed",
                                                       "failed"};
        for (size_t i = 0; i < names.size(); ++i)
            if (names[i] == p->second) *state = static_cast<int>(i);
        return kSuccess;
    } catch (...) {
        return kInvalidValue;
    }
}

CUresult cuCheckpointProcessLock(int pid, LockArgs* args) {
    if (args && (args->reserved0 != 0)) return kInvalidValue;
    return transition("lock", pid, "running", "locked");
}

CUresult cuCheckpointProcessCheckpoint(int pid, void*) {
    return transition("checkpoint", pid, "locked", "checkpointed");
}

CUresult cuCheckpointProcessRestore(int pid, void*) {
    return transition("restore", pid, "checkpointed", "locked");
}

CUresult cuCheckpointProcessUnlock(int pid, void*) {
    return transition("unlock", pid, "locked", "running");
}

}  // extern "C"
