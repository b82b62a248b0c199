// infervisor-unit-state UNIT: what systemd says of a unit, for the daemon,
// which does not link libsystemd (daemon/lib/journal/journal_socket.h says
// why). It asks the service manager over its bus, PID 1's private socket
// first (root; no D-Bus broker needed), then the system bus, each call
// bounded by 5 seconds, and prints three lines:
//
//   ActiveState=active
//   ControlGroup=/system.slice/infervisor-workers.service
//   JobType=restart          (empty when the unit has no pending job)
//
// Exit status 0 with those lines, 1 with the reason on stderr, 2 for a bad
// command line. The daemon runs it at start-up (where the workers' cgroups
// live) and on SIGTERM (is this a stop or a restart), through run_helper
// (process/helper_process.h): a few times in its life, never in its loop.
#include <systemd/sd-bus.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

namespace {

constexpr const char* kDestination = "org.freedesktop.systemd1";
constexpr const char* kManagerPath = "/org/freedesktop/systemd1";
constexpr const char* kUnitInterface = "org.freedesktop.systemd1.Unit";
constexpr std::uint64_t kCallTimeoutUsec = 5'000'000;

struct BusUnref {
    void operator()(sd_bus* bus) const { sd_bus_flush_close_unref(bus); }
};
using Bus = std::unique_ptr<sd_bus, BusUnref>;

struct MessageUnref {
    void operator()(sd_bus_message* m) const { sd_bus_message_unref(m); }
};
using Message = std::unique_ptr<sd_bus_message, MessageUnref>;

// Why a call failed, kept for the one line on stderr.
std::string failure;

bool fail(const std::string& what, int r, const sd_bus_error* error = nullptr) {
    failure =
        what + ": " + (error && error->message ? std::string(error->message) : std::strerror(-r));
    return false;
}

struct ErrorGuard {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    ~ErrorGuard() { sd_bus_error_free(&error); }
};

Bus connect() {
    sd_bus* raw = nullptr;
    if (sd_bus_new(&raw) >= 0) {
        Bus bus(raw);
        if (sd_bus_set_address(raw, "unix:path=/run/systemd/private") >= 0 &&
            sd_bus_start(raw) >= 0) {
            sd_bus_set_method_call_timeout(raw, kCallTimeoutUsec);
            return bus;
        }
    }
    raw = nullptr;
    int r = sd_bus_open_system(&raw);
    if (r < 0) {
        fail("connect to the system bus", r);
        return nullptr;
    }
    sd_bus_set_method_call_timeout(raw, kCallTimeoutUsec);
    return Bus(raw);
}

std::optional<std::string> string_property(sd_bus* bus, const std::string& path,
                                           const char* interface, const char* property) {
    ErrorGuard e;
    char* value = nullptr;
    int r = sd_bus_get_property_string(bus, kDestination, path.c_str(), interface, property,
                                       &e.error, &value);
    if (r < 0)
        return fail(std::string("get ") + property + " of " + path, r, &e.error), std::nullopt;
    std::string out = value ? value : "";
    std::free(value);
    return out;
}

// The object path of a loaded unit (LoadUnit: loads it if it is not yet).
std::optional<std::string> unit_path(sd_bus* bus, const std::string& unit) {
    ErrorGuard e;
    sd_bus_message* raw = nullptr;
    int r = sd_bus_call_method(bus, kDestination, kManagerPath, "org.freedesktop.systemd1.Manager",
                               "LoadUnit", &e.error, &raw, "s", unit.c_str());
    if (r < 0) return fail("load unit " + unit, r, &e.error), std::nullopt;
    Message reply(raw);
    const char* path = nullptr;
    r = sd_bus_message_read(raw, "o", &path);
    if (r < 0) return fail("read the reply to LoadUnit " + unit, r), std::nullopt;
    return std::string(path);
}

// The type of the unit's pending job, or "" when it has none.
std::optional<std::string> job_type(sd_bus* bus, const std::string& unit_object) {
    ErrorGuard e;
    sd_bus_message* raw = nullptr;
    int r = sd_bus_get_property(bus, kDestination, unit_object.c_str(), kUnitInterface, "Job",
                                &e.error, &raw, "(uo)");
    if (r < 0) return fail("get Job of " + unit_object, r, &e.error), std::nullopt;
    Message reply(raw);
    std::uint32_t id = 0;
    const char* job = nullptr;
    r = sd_bus_message_read(raw, "(uo)", &id, &job);
    if (r < 0) return fail("read Job of " + unit_object, r), std::nullopt;
    if (id == 0 || !job) return std::string();
    return string_property(bus, job, "org.freedesktop.systemd1.Job", "JobType");
}

bool one_line(const std::string& value) { return value.find('\n') == std::string::npos; }

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 || !*argv[1]) {
        std::fprintf(stderr, "usage: infervisor-unit-state UNIT\n");
        return 2;
    }
    const std::string unit = argv[1];
    Bus bus = connect();
    if (!bus) {
        std::fprintf(stderr, "%s\n", failure.c_str());
        return 1;
    }
    auto path = unit_path(bus.get(), unit);
    auto active =
        path ? string_property(bus.get(), *path, kUnitInterface, "ActiveState") : std::nullopt;
    // ControlGroup is on the Service/Scope/Slice interface, not on Unit.
    std::string type_interface =
        std::string("org.freedesktop.systemd1.") + (unit.ends_with(".scope")   ? "Scope"
                                                    : unit.ends_with(".slice") ? "Slice"
                                                                               : "Service");
    auto cgroup = active ? string_property(bus.get(), *path, type_interface.c_str(), "ControlGroup")
                         : std::nullopt;
    auto job = cgroup ? job_type(bus.get(), *path) : std::nullopt;
    if (!job) {
        std::fprintf(stderr, "%s\n", failure.c_str());
        return 1;
    }
    if (!one_line(*active) || !one_line(*cgroup) || !one_line(*job)) {
        std::fprintf(stderr, "systemd's answer for %s has a line break in it\n", unit.c_str());
        return 1;
    }
    std::printf("ActiveState=%s\nControlGroup=%s\nJobType=%s\n", active->c_str(), cgroup->c_str(),
                job->c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
}
