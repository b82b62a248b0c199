#include "app/systemd_manager.h"

#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>

#include <cstdlib>
#include <memory>

namespace infervisor {

namespace {

constexpr const char* kDestination = "org.freedesktop.systemd1";
constexpr const char* kManagerPath = "/org/freedesktop/systemd1";
constexpr const char* kUnitInterface = "org.freedesktop.systemd1.Unit";

struct BusUnref {
    void operator()(sd_bus* bus) const { sd_bus_flush_close_unref(bus); }
};
using Bus = std::unique_ptr<sd_bus, BusUnref>;

struct ErrorGuard {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    ~ErrorGuard() { sd_bus_error_free(&error); }
    Error as_error(const std::string& what, int r) const {
        std::string detail = error.message ? error.message : "";
        errno = -r;
        return detail.empty() ? errno_error(what) : plain_error(what + ": " + detail);
    }
};

struct MessageUnref {
    void operator()(sd_bus_message* m) const { sd_bus_message_unref(m); }
};
using Message = std::unique_ptr<sd_bus_message, MessageUnref>;

// PID 1's private socket first (root only; works without a D-Bus broker).
Result<Bus> connect() {
    sd_bus* raw = nullptr;
    int r = sd_bus_new(&raw);
    if (r < 0) {
        errno = -r;
        return errno_error("sd_bus_new");
    }
    Bus bus(raw);
    if (sd_bus_set_address(raw, "unix:path=/run/systemd/private") >= 0 && sd_bus_start(raw) >= 0) {
        sd_bus_set_method_call_timeout(raw, std::chrono::microseconds(kCallTimeout).count());
        return bus;
    }
    bus.reset();
    r = sd_bus_open_system(&raw);
    if (r < 0) {
        errno = -r;
        return errno_error("connect to the system bus");
    }
    bus.reset(raw);
    sd_bus_set_method_call_timeout(raw, std::chrono::microseconds(kCallTimeout).count());
    return bus;
}

Result<std::string> string_property(sd_bus* bus, const std::string& path, const char* interface,
                                    const char* property) {
    ErrorGuard e;
    char* value = nullptr;
    int r = sd_bus_get_property_string(bus, kDestination, path.c_str(), interface, property,
                                       &e.error, &value);
    if (r < 0) return e.as_error(std::string("get ") + property + " of " + path, r);
    std::string out = value ? value : "";
    std::free(value);
    return out;
}

// The object path of a loaded unit (LoadUnit: loads it if it is not yet).
Result<std::string> unit_path(sd_bus* bus, const std::string& unit) {
    ErrorGuard e;
    sd_bus_message* raw = nullptr;
    int r = sd_bus_call_method(bus, kDestination, kManagerPath, "org.freedesktop.systemd1.Manager",
                               "LoadUnit", &e.error, &raw, "s", unit.c_str());
    if (r < 0) return e.as_error("load unit " + unit, r);
    Message reply(raw);
    const char* path = nullptr;
    r = sd_bus_message_read(raw, "o", &path);
    if (r < 0) {
        errno = -r;
        return errno_error("read the reply to LoadUnit " + unit);
    }
    return std::string(path);
}

// The type of the unit's pending job, or "" when it has none.
Result<std::string> job_type(sd_bus* bus, const std::string& unit_object) {
    ErrorGuard e;
    sd_bus_message* raw = nullptr;
    int r = sd_bus_get_property(bus, kDestination, unit_object.c_str(), kUnitInterface, "Job",
                                &e.error, &raw, "(uo)");
    if (r < 0) return e.as_error("get Job of " + unit_object, r);
    Message reply(raw);
    uint32_t id = 0;
    const char* job = nullptr;
    r = sd_bus_message_read(raw, "(uo)", &id, &job);
    if (r < 0) {
        errno = -r;
        return errno_error("read Job of " + unit_object);
    }
    if (id == 0 || !job) return std::string();
    return string_property(bus, job, "org.freedesktop.systemd1.Job", "JobType");
}

}  // namespace

Result<UnitState> systemd_unit_state(const std::string& unit) {
    auto bus = connect();
    if (!bus) return bus.error();
    auto path = unit_path(bus->get(), unit);
    if (!path) return path.error();
    UnitState state;
    auto active = string_property(bus->get(), *path, kUnitInterface, "ActiveState");
    if (!active) return active.error();
    state.active_state = *active;
    // ControlGroup is on the Service/Scope/Slice interface, not on Unit.
    std::string type_interface =
        std::string("org.freedesktop.systemd1.") + (unit.ends_with(".scope")   ? "Scope"
                                                    : unit.ends_with(".slice") ? "Slice"
                                                                               : "Service");
    auto cgroup = string_property(bus->get(), *path, type_interface.c_str(), "ControlGroup");
    if (!cgroup) return cgroup.error();
    state.control_group = *cgroup;
    auto job = job_type(bus->get(), *path);
    if (!job) return job.error();
    state.job_type = *job;
    return state;
}

Result<std::string> own_systemd_unit() {
    char* unit = nullptr;
    int r = sd_pid_get_unit(0, &unit);
    if (r < 0) {
        errno = -r;
        return errno_error("find this process's systemd unit");
    }
    std::string out = unit;
    std::free(unit);
    return out;
}

}  // namespace infervisor
