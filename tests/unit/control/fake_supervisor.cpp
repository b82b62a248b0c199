#include "fake_supervisor.h"

#include <fmt/format.h>

#include <algorithm>

namespace infervisor::testing {

WorkerView& FakeSupervisor::add_worker(const std::string& name, const std::string& state) {
    WorkerDetail detail;
    detail.view.name = name;
    detail.view.state = state;
    detail.spec = {{"name", name},
                   {"command", {"/usr/bin/" + name, "--serve"}},
                   {"environment", {{"HF_TOKEN", "hf_secret_of_" + name}}}};
    workers_.push_back(std::move(detail));
    return workers_.back().view;
}

void FakeSupervisor::add_workers(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        auto& s = add_worker(fmt::format("worker-{:03}", i), i % 7 ? "running" : "backoff");
        s.main_pid = static_cast<pid_t>(10000 + i);
        s.uptime_usec = 3600'000'000ull + i;
        s.restarts = i % 3;
        s.memory_current = (512ull << 20) + i * 4096;
        s.memory_high = 6ull << 30;
        s.memory_max = 8ull << 30;
        s.memory_peak = 7ull << 30;
        s.swap_current = 0;
        s.memory_pressure_some_avg10 = 0.25 * static_cast<double>(i % 5);
        s.last_exit = "exited 0";
    }
}

WorkerDetail* FakeSupervisor::find(const std::string& name) {
    auto it = std::find_if(workers_.begin(), workers_.end(),
                           [&](const WorkerDetail& w) { return w.view.name == name; });
    return it == workers_.end() ? nullptr : &*it;
}

std::vector<WorkerView> FakeSupervisor::list_workers() const {
    std::vector<WorkerView> out;
    for (const auto& w : workers_) out.push_back(w.view);
    return out;
}

std::optional<WorkerDetail> FakeSupervisor::get_worker(const std::string& name) const {
    for (const auto& w : workers_)
        if (w.view.name == name) return w;
    return std::nullopt;
}

std::vector<ControlEvent> FakeSupervisor::recent_events(const EventQuery& query) const {
    return events_.select(query);
}

void FakeSupervisor::validate_config(ConfigTexts texts, const PeerCredentials& caller,
                                     ValidateDone done) {
    last_validation_caller = caller;
    if (!refuse_validation.empty()) return done(ValidationOutcome::refused(refuse_validation));
    auto errors = bad_lines(texts.main.text, texts.main.file);
    for (const auto& d : texts.dropins)
        for (auto& e : bad_lines(d.text, d.file)) errors.push_back(std::move(e));
    done({true, std::move(errors), {}});
}

std::vector<std::string> FakeSupervisor::bad_lines(const std::string& text,
                                                   const std::string& name) {
    // Every line that says "bad" is an error there.
    std::vector<std::string> errors;
    int line = 1;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        if (text.compare(start, end - start, "bad") == 0)
            errors.push_back(fmt::format("{}:{}:1: bad line", name, line));
        start = end + 1;
        ++line;
    }
    return errors;
}

void FakeSupervisor::act(const std::string& verb, const std::vector<std::string>& names,
                         const std::string& new_state, ActionDone done) {
    for (const auto& n : names)
        if (!find(n)) return done(ActionOutcome::not_found(n));
    std::string record = verb;
    for (const auto& n : names) record += " " + n;
    actions.push_back(record);
    auto finish = [this, names, new_state, done = std::move(done)] {
        for (const auto& n : names)
            if (auto* w = find(n)) w->view.state = new_state;
        done(ActionOutcome::success());
    };
    if (hold_actions) {
        pending_.push_back(std::move(finish));
    } else {
        finish();
    }
}

void FakeSupervisor::start(const std::vector<std::string>& names, ActionDone done) {
    act("start", names, "running", std::move(done));
}

void FakeSupervisor::stop(const std::vector<std::string>& names, ActionDone done) {
    act("stop", names, "stopped", std::move(done));
}

void FakeSupervisor::restart(const std::vector<std::string>& names, ActionDone done) {
    act("restart", names, "running", std::move(done));
}

void FakeSupervisor::kill(const std::string& name, int signal, ActionDone done) {
    if (!find(name)) return done(ActionOutcome::not_found(name));
    actions.push_back(fmt::format("kill {} {}", name, signal));
    done(ActionOutcome::success());
}

void FakeSupervisor::checkpoint(const std::vector<std::string>& names, ActionDone done) {
    for (const auto& n : names)
        if (!find(n)) return done(ActionOutcome::not_found(n));
    std::string record = "checkpoint";
    for (const auto& n : names) record += " " + n;
    actions.push_back(record);
    done(ActionOutcome::success());
}

void FakeSupervisor::suspend(const std::vector<std::string>& names, ActionDone done) {
    act("suspend", names, "suspended", std::move(done));
}

void FakeSupervisor::drain(DrainDone done) {
    actions.push_back("drain");
    is_drained = true;
    DrainOutcome outcome;
    for (auto& w : workers_)
        if (w.view.state != "stopped") {
            drained_were_up.push_back(w.view.name);
            outcome.steps.push_back({w.view.name, "stopped"});
            w.view.state = "stopped";
        }
    done(std::move(outcome));
}

std::vector<std::string> FakeSupervisor::undrain() {
    actions.push_back("undrain");
    is_drained = false;
    return std::exchange(drained_were_up, {});
}

void FakeSupervisor::resume(const std::vector<std::string>& names, ActionDone done) {
    act("resume", names, "running", std::move(done));
}

void FakeSupervisor::reload(ChangeMode mode, ReloadDone done) {
    bool preview = mode == ChangeMode::preview;
    actions.push_back(preview ? "reload --dry-run" : "reload");
    ReloadOutcome outcome = next_reload;
    outcome.applied = outcome.valid && !preview;
    done(outcome);
}

void FakeSupervisor::remove_workdir(const std::string& name, ChangeMode mode,
                                    RemoveWorkDirDone done) {
    if (find(name))
        return done(
            {ActionOutcome::failure(name, "worker '" + name + "' is configured"), {}, false});
    bool preview = mode == ChangeMode::preview;
    actions.push_back((preview ? "remove-workdir --dry-run " : "remove-workdir ") + name);
    auto it = std::find(workdirs.begin(), workdirs.end(), name);
    bool existed = it != workdirs.end();
    if (existed && !preview) workdirs.erase(it);
    ActionOutcome ok = ActionOutcome::success();
    ok.worker = name;
    done({ok, workdir_root + "/" + name, existed});
}

CheckpointListing FakeSupervisor::list_checkpoints(const std::string& name) const {
    CheckpointListing listing;
    bool known = std::any_of(workers_.begin(), workers_.end(),
                             [&](const WorkerDetail& w) { return w.view.name == name; });
    if (!known) {
        listing.outcome = ActionOutcome::not_found(name);
        return listing;
    }
    listing.directory = "/var/lib/infervisor/checkpoints/" + name;
    if (auto it = checkpoints.find(name); it != checkpoints.end()) listing.checkpoints = it->second;
    return listing;
}

void FakeSupervisor::delete_checkpoints(const std::string& name,
                                        const CheckpointSelection& selection,
                                        const PeerCredentials& caller, CheckpointsDeleted done) {
    if (!find(name)) return done({ActionOutcome::not_found(name), {}});
    auto& held = checkpoints[name];
    std::vector<std::string> ids = selection.ids;
    if (selection.all)
        for (const auto& c : held) ids.push_back(c.id);
    for (const auto& id : ids)
        if (std::none_of(held.begin(), held.end(), [&](const auto& c) { return c.id == id; }))
            return done({ActionOutcome::failure(name, "no checkpoint '" + id + "'"), {}});
    std::string action = "delete-checkpoints " + name;
    for (const auto& id : ids) action += " " + id;
    actions.push_back(action + " by uid " + std::to_string(caller.uid));
    std::erase_if(
        held, [&](const auto& c) { return std::find(ids.begin(), ids.end(), c.id) != ids.end(); });
    done({ActionOutcome::success(), ids});
}

Subscription FakeSupervisor::subscribe(EventSink sink) {
    int id = next_subscriber_++;
    subscribers_[id] = std::move(sink);
    return Subscription([this, id] { subscribers_.erase(id); });
}

void FakeSupervisor::emit(ControlEvent event) {
    events_.record(event);
    auto targets = subscribers_;  // a sink may end any subscription
    for (const auto& [id, sink] : targets)
        if (subscribers_.count(id)) sink(event);
}

void FakeSupervisor::complete_pending() {
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& finish : pending) finish();
}

}  // namespace infervisor::testing
