#include "supervise/worker_checkpoints.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <utility>

#include "base/file_io.h"
#include "base/signal_names.h"
#include "base/units.h"
#include "checkpoint/checkpoint_config.h"
#include "supervise/worker_credentials.h"

namespace infervisor {

namespace fs = std::filesystem;

namespace {

std::string seconds_text(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", seconds);
    return buf;
}

// Unrequested checkpoints closer together than this are ignored.
constexpr Duration kMinUnrequestedGap = std::chrono::seconds(1);

double seconds_between(TimePoint from, TimePoint to) {
    return std::chrono::duration<double>(to - from).count();
}

// Seconds since the checkpoint was published (the rename set its ctime).
std::optional<double> age_of(const StoredCheckpoint& checkpoint) {
    struct stat st;
    if (::lstat(checkpoint.path.c_str(), &st) < 0) return std::nullopt;
    timespec now;
    ::clock_gettime(CLOCK_REALTIME, &now);
    return double(now.tv_sec - st.st_ctim.tv_sec) + double(now.tv_nsec - st.st_ctim.tv_nsec) / 1e9;
}

// What the background learnt of a taken checkpoint.
struct Judged {
    Result<void> sealed;
    Result<uint64_t> bytes = uint64_t{0};
    Result<void> trash;
    // The complete checkpoints before the new one, oldest first, and the
    // size of their file system: what the retention rule needs.
    std::vector<MeasuredCheckpoint> older;
    Result<uint64_t> fs_bytes = uint64_t{0};
};

// Blocking: the sizes and ages of `sequences` below `dir_fd`, from their info
// files (measured where there is none: a checkpoint of an older version).
std::vector<MeasuredCheckpoint> measure_older(int dir_fd, const std::vector<uint64_t>& sequences) {
    std::vector<MeasuredCheckpoint> out;
    int64_t now = static_cast<int64_t>(::time(nullptr));
    for (uint64_t sequence : sequences) {
        MeasuredCheckpoint c{sequence, 0, std::nullopt};
        if (auto info = CheckpointStore::read_info(dir_fd, sequence)) {
            c.bytes = info->bytes;
            if (info->written_at)
                c.age = std::chrono::seconds(std::max<int64_t>(0, now - *info->written_at));
        } else if (auto usage = CheckpointStore::measure(dir_fd, sequence)) {
            c.bytes = usage->bytes;  // a lower bound at worst: that only keeps fewer
        } else {
            continue;  // gone meanwhile
        }
        out.push_back(c);
    }
    return out;
}

// The bytes of a measured tree, or why they cannot be held to the quota: a
// tree too big to measure whole counts as unmeasured.
Result<uint64_t> exact_bytes(const Result<TreeUsage>& usage) {
    if (!usage) return usage.error();
    if (!usage->exact())
        return plain_error("measuring stopped at " + usage->capped_by(UsageLimits{}) +
                           " (at least " + std::to_string(usage->bytes) + " bytes)");
    return usage->bytes;
}

// What a sweep measured: every complete checkpoint afresh.
struct Swept {
    std::vector<MeasuredCheckpoint> all;  // oldest first; unmeasurable: UINT64_MAX bytes
    std::vector<bool> measured;           // parallel to `all`
    Result<uint64_t> fs_bytes = uint64_t{0};
};

// Blocking: measures `sequences` below `dir_fd` (their trees, not their info
// files: a checkpoint may have grown since), with their ages from the info.
Swept measure_all(int dir_fd, const std::vector<uint64_t>& sequences) {
    Swept out;
    int64_t now = static_cast<int64_t>(::time(nullptr));
    for (uint64_t sequence : sequences) {
        auto usage = CheckpointStore::measure(dir_fd, sequence);
        if (!usage && usage.error().code == ENOENT) continue;  // retired meanwhile
        auto bytes = exact_bytes(usage);
        MeasuredCheckpoint c{sequence, bytes ? *bytes : UINT64_MAX, std::nullopt};
        if (auto info = CheckpointStore::read_info(dir_fd, sequence); info && info->written_at)
            c.age = std::chrono::seconds(std::max<int64_t>(0, now - *info->written_at));
        out.all.push_back(c);
        out.measured.push_back(bool(bytes));
    }
    out.fs_bytes = CheckpointStore::filesystem_bytes(dir_fd);
    return out;
}

}  // namespace

WorkerCheckpoints::WorkerCheckpoints(boost::asio::io_context& io, const Clock& clock, Paths paths,
                                     std::string worker, Emit emit)
    : io_(io),
      clock_(clock),
      paths_(std::move(paths)),
      worker_(std::move(worker)),
      emit_(std::move(emit)),
      timeout_timer_(clock.make_timer()),
      periodic_timer_(clock.make_timer()),
      sweep_timer_(clock.make_timer()) {
    restore_timer_ = clock.make_timer();
    arm_sweep();
}

WorkerCheckpoints::~WorkerCheckpoints() = default;

std::string WorkerCheckpoints::last_good() const {
    if (!store_ || !store_->newest()) return "none";
    return store_->newest()->path.string();
}

void WorkerCheckpoints::set_staging_owner(uid_t uid, gid_t gid) {
    // criu writes the staging dir as root: the worker must not own it.
    bool criu = spec_.method == CheckpointMethod::criu;
    uid_ = criu ? 0 : uid;
    gid_ = criu ? 0 : gid;
}

Result<WorkerCheckpoints::RunDirs> WorkerCheckpoints::prepare_run(const ProcessIdentity& who) {
    auto store = CheckpointStore::open(paths_.state_dir / "checkpoints", worker_);
    if (!store) return store.error();
    store_.emplace(std::move(*store));
    set_staging_owner(who.uid, who.gid);
    bool criu = spec_.method == CheckpointMethod::criu;
    criu_restore_seconds_.reset();
    restoring_ = false;
    // A checkpoint a dead daemon was judging is dropped, never offered.
    if (recording_ == 0)
        if (auto r = store_->discard_incoming(); !r) return r.error();
    auto staging = store_->fresh_staging(uid_, gid_);
    if (!staging) return staging.error();
    offered_ = store_->newest();
    if (store_->take_trash_flag()) empty_trash_in_background();
    RunDirs dirs{*staging, std::nullopt};
    if (!offered_) return dirs;
    std::optional<CriuRecord> record;
    if (auto dir = store_->dup_dir())
        record = read_criu_record(dir->get(), CheckpointStore::sequence_name(offered_->sequence));
    if (record && criu && record->identity != who) {
        // criu would bring back the identity in the image: not this
        // worker's (a config change, or an image of a removed worker whose
        // uid another has now). Refused: the run starts fresh.
        emit_(EventKind::checkpoint_failed,
              "criu image " + offered_->path.string() + " not restored: it was dumped as " +
                  (record->identity ? record->identity->describe() : "an unrecorded identity") +
                  ", the worker now runs as " + who.describe() + "; starting fresh",
              {{"CHECKPOINT", offered_->path.string()},
               {"METHOD", "criu"},
               {"REASON", "criu-identity"}});
        offered_.reset();
    } else if (record && criu && !record->held) {
        // A restore is verified against the files the worker held at the
        // dump (held_files.h); a record without them (an older daemon's)
        // cannot be, and criu would reopen its paths as root unchecked.
        emit_(EventKind::checkpoint_failed,
              "criu image " + offered_->path.string() +
                  " not restored: its record does not list the files the worker held (an "
                  "older infervisord wrote it), so a restore could not be verified; starting "
                  "fresh",
              {{"CHECKPOINT", offered_->path.string()},
               {"METHOD", "criu"},
               {"REASON", "criu-unverifiable"}});
        offered_.reset();
    } else if (record && criu) {
        dirs.criu_restore = offered_->path;
        dirs.criu_record = std::move(*record);
    } else if (record) {
        offered_.reset();  // a criu image is of no use to a worker's own restore
    } else {
        dirs.restore_from = offered_->path;
    }
    restoring_ = offered_.has_value();
    return dirs;
}

Result<WorkerCheckpoints::RunDirs> WorkerCheckpoints::adopt_run(uid_t uid, gid_t gid) {
    auto store = CheckpointStore::open(paths_.state_dir / "checkpoints", worker_);
    if (!store) return store.error();
    store_.emplace(std::move(*store));
    // As for a new run: an adopted criu worker's next staging dir is root's
    // too (issue 26, defect 11: it was the worker's, and criu dumps were
    // refused until the next run).
    set_staging_owner(uid, gid);
    offered_.reset();
    restoring_ = false;
    // The daemon that was judging a checkpoint died: it is dropped (else no
    // further checkpoint could be taken while this run lasts).
    if (recording_ == 0)
        if (auto r = store_->discard_incoming(); !r) return r.error();
    return RunDirs{store_->staging_path(), std::nullopt};
}

void WorkerCheckpoints::run_started(Signaller signaller) {
    signaller_ = std::move(signaller);
    if (!offered_ || !store_ || criu_restore_seconds_) return;
    Fields fields = {{"CHECKPOINT", offered_->path.string()},
                     {"CHECKPOINT_SEQUENCE", std::to_string(offered_->sequence)}};
    std::string numbers;
    if (auto dir = store_->dup_dir()) {
        if (auto info = CheckpointStore::read_info(dir->get(), offered_->sequence)) {
            fields.emplace_back("CHECKPOINT_BYTES", std::to_string(info->bytes));
            numbers = ", " + format_size(info->bytes);
        }
    }
    if (auto age = age_of(*offered_)) {
        fields.emplace_back("CHECKPOINT_AGE_SECONDS", seconds_text(*age));
        numbers += ", written " + format_duration(Duration(int64_t(*age * 1000))) + " ago";
    }
    emit_(EventKind::checkpoint_restoring,
          "started with INFERVISOR_RESTORE_FROM=" + offered_->path.string() + " (checkpoint " +
              std::to_string(offered_->sequence) + numbers + ")",
          std::move(fields));
}

void WorkerCheckpoints::run_ready(TimePoint started_at, bool announced) {
    arm_periodic();
    ready_ = true;
    // llama-server: the slots are restored now that the server answers;
    // checkpoint-restored once they are.
    if (spec_.method == CheckpointMethod::llama_server && offered_ && !criu_restore_seconds_)
        return restore_llama(started_at);
    restoring_ = false;
    if (criu_restore_seconds_ && offered_) {
        double seconds = *std::exchange(criu_restore_seconds_, std::nullopt);
        emit_(EventKind::checkpoint_restored,
              "restored by criu from checkpoint " + std::to_string(offered_->sequence) + " in " +
                  seconds_text(seconds) + " s",
              {{"CHECKPOINT", offered_->path.string()},
               {"CHECKPOINT_SEQUENCE", std::to_string(offered_->sequence)},
               {"RESTORE_SECONDS", seconds_text(seconds)},
               {"METHOD", "criu"}});
        return;
    }
    if (!announced || !offered_) return;
    double seconds = seconds_between(started_at, clock_.now());
    emit_(EventKind::checkpoint_restored,
          "ready " + seconds_text(seconds) + " s after starting from checkpoint " +
              std::to_string(offered_->sequence),
          {{"CHECKPOINT", offered_->path.string()},
           {"CHECKPOINT_SEQUENCE", std::to_string(offered_->sequence)},
           {"RESTORE_SECONDS", seconds_text(seconds)}});
}

void WorkerCheckpoints::run_ended() {
    signaller_ = nullptr;
    restoring_ = false;
    ready_ = false;
    if (llama_) llama_->run_ended();
    restore_timer_->cancel();
    periodic_timer_->cancel();
    if (pending_) finish({false, false, "the run ended"});
}

Result<std::vector<WorkerCheckpoints::Listed>> WorkerCheckpoints::list() const {
    std::optional<CheckpointStore> read;
    const CheckpointStore* store = store_ ? &*store_ : nullptr;
    if (!store) {
        auto existing = CheckpointStore::open_existing(paths_.state_dir / "checkpoints", worker_);
        if (!existing) return existing.error();
        if (!*existing) return std::vector<Listed>{};
        read = std::move(**existing);
        store = &*read;
    }
    auto dir = store->dup_dir();
    if (!dir) return dir.error();
    std::vector<Listed> out;
    for (const auto& c : store->complete()) {
        Listed listed{c};
        listed.written_at = CheckpointStore::published_at(dir->get(), c.sequence);
        if (auto info = CheckpointStore::read_info(dir->get(), c.sequence))
            listed.bytes = info->bytes;
        listed.criu =
            read_criu_record(dir->get(), CheckpointStore::sequence_name(c.sequence)).has_value();
        // Whether the daemon's record is there (a root-owned file), not what it says.
        struct stat st;
        std::string record = CheckpointStore::sequence_name(c.sequence) + "/" + kLlamaRecordName;
        listed.llama_server =
            ::fstatat(dir->get(), record.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == 0;
        out.push_back(std::move(listed));
    }
    // As prepare_run decides: the newest, unless it is a criu image and the
    // method is not criu (a cooperative worker cannot use one).
    if (!out.empty() && (!out.back().criu || spec_.method == CheckpointMethod::criu))
        out.back().next_restore = true;
    return out;
}

namespace {

// A caller's id in a message: bounded, and only when it is plain text.
std::string shown_id(const std::string& id) {
    bool plain = id.size() <= 32 &&
                 std::all_of(id.begin(), id.end(), [](char c) { return c > ' ' && c < 0x7f; });
    return plain ? "'" + id + "'" : "(an id of " + std::to_string(id.size()) + " bytes)";
}

}  // namespace

Result<std::vector<StoredCheckpoint>> WorkerCheckpoints::remove(const std::vector<std::string>& ids,
                                                                bool all, uid_t caller_uid) {
    if (pending_ || recording_ > 0)
        return plain_error("a checkpoint of '" + worker_ +
                           "' is being written; try again once checkpoint-written or "
                           "checkpoint-failed is journaled");
    if (!store_) {
        auto existing = CheckpointStore::open_existing(paths_.state_dir / "checkpoints", worker_);
        if (!existing) return existing.error();
        if (*existing) store_.emplace(std::move(**existing));
    }
    std::vector<StoredCheckpoint> chosen;
    if (all && store_) chosen = store_->complete();
    for (const auto& id : ids) {
        auto found = store_ ? store_->find(id) : std::nullopt;
        if (!found)
            return plain_error("worker '" + worker_ + "' has no checkpoint " + shown_id(id) +
                               " (infervisorctl checkpoints " + worker_ + " lists them)");
        if (std::find(chosen.begin(), chosen.end(), *found) == chosen.end())
            chosen.push_back(*found);
    }
    std::sort(chosen.begin(), chosen.end(),
              [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
    for (const auto& c : chosen)
        if (restoring_ && offered_ && offered_->sequence == c.sequence)
            return plain_error("checkpoint " + CheckpointStore::sequence_name(c.sequence) +
                               " of '" + worker_ +
                               "' is being restored by the run that is starting; try again once "
                               "it is running");
    if (chosen.empty()) return chosen;
    std::vector<StoredCheckpoint> deleted;
    std::string names;
    for (const auto& c : chosen) {
        if (auto r = store_->retire(c.sequence); !r) {
            if (deleted.empty()) return r.error();
            spdlog::error("{}: deleting checkpoint {}: {}", worker_, c.sequence,
                          r.error().message());
            break;  // journal what went
        }
        deleted.push_back(c);
        names += (names.empty() ? "" : ", ") + CheckpointStore::sequence_name(c.sequence);
    }
    if (store_->take_trash_flag()) empty_trash_in_background();
    std::string next = last_good();
    emit_(EventKind::checkpoint_deleted,
          "checkpoint" + std::string(deleted.size() == 1 ? " " : "s ") + names +
              " deleted on request of uid " + std::to_string(caller_uid) +
              (store_->newest() ? "; newest left: " + next
                                : std::string("; none left: the next start is fresh")),
          {{"CHECKPOINT_IDS", names},
           {"CHECKPOINTS_DELETED", std::to_string(deleted.size())},
           {"CALLER_UID", std::to_string(caller_uid)},
           {"NEXT_RESTORE", next}});
    if (deleted.size() != chosen.size())
        return plain_error("deleted " + names + ", then stopped: see the daemon's log");
    return deleted;
}

Duration WorkerCheckpoints::limit() const {
    if (pending_ && pending_->bound) return std::min(*pending_->bound, spec_.timeout);
    return spec_.timeout;
}

Result<void> WorkerCheckpoints::request(std::string trigger, std::string if_late, Finished finished,
                                        bool thaw, bool then_stop, std::optional<Duration> bound) {
    if (!signaller_) return plain_error("not running");
    if (pending_) return plain_error("a checkpoint is already under way");
    if (spec_.method == CheckpointMethod::criu)
        return request_criu(Pending{std::move(trigger), std::move(if_late), clock_.now(),
                                    std::move(finished), false, true, then_stop},
                            thaw);
    if (spec_.method == CheckpointMethod::llama_server)
        return request_llama(Pending{std::move(trigger), std::move(if_late), clock_.now(),
                                     std::move(finished), false, false, then_stop, true, bound},
                             thaw);
    if (auto r = signaller_(spec_.signal, thaw); !r) return r;
    pending_ = Pending{std::move(trigger), std::move(if_late), clock_.now(), std::move(finished)};
    pending_->bound = bound;
    timeout_timer_->arm(limit(), [this] { on_timeout(); });
    return {};
}

void WorkerCheckpoints::finish(Outcome outcome) {
    timeout_timer_->cancel();
    auto pending = std::move(pending_);
    pending_.reset();
    if (pending && pending->criu && pending->then_stop) outcome.kill = true;
    if (pending && pending->finished) pending->finished(outcome);
}

void WorkerCheckpoints::on_timeout() {
    if (!awaiting_answer()) return;
    std::string last = last_good();
    if (pending_->llama) {
        // The saves so far are dropped with the staging dir: a checkpoint
        // is all the slots or none.
        if (llama_) llama_->cancel();
        if (auto staging = store_->fresh_staging(uid_, gid_); !staging)
            spdlog::error("{}: {}", worker_, staging.error().message());
        if (store_->take_trash_flag()) empty_trash_in_background();
        emit_(EventKind::checkpoint_failed,
              "llama-server did not save its slots within " + format_duration(limit()) + " (" +
                  pending_->trigger + "); " + pending_->if_late + "; last good checkpoint: " + last,
              {{"TRIGGER", pending_->trigger},
               {"REASON", "timeout"},
               {"METHOD", "llama-server"},
               {"TIMEOUT_MS", std::to_string(limit().count())},
               {"LAST_CHECKPOINT", last}});
        return finish({false, true,
                       "llama-server did not save its slots within " + format_duration(limit())});
    }
    emit_(EventKind::checkpoint_failed,
          "no CHECKPOINT=1 within " + format_duration(limit()) + " of " +
              signal_name(spec_.signal) + " (" + pending_->trigger + "); " + pending_->if_late +
              "; last good checkpoint: " + last,
          {{"TRIGGER", pending_->trigger},
           {"REASON", "timeout"},
           {"TIMEOUT_MS", std::to_string(limit().count())},
           {"LAST_CHECKPOINT", last}});
    finish({false, true, "no CHECKPOINT=1 within " + format_duration(limit())});
}

void WorkerCheckpoints::report_unusable(const std::string& trigger, const Error& error,
                                        bool answer) {
    // Unrequested ones are the worker's own doing: the first few, then every 100th.
    size_t n = answer ? 0 : ++unusable_unrequested_;
    if (answer || n <= 5 || n % 100 == 0) {
        std::string last = last_good();
        emit_(EventKind::checkpoint_failed,
              "CHECKPOINT=1 (" + trigger + ") but " + error.message() +
                  "; last good checkpoint: " + last,
              {{"TRIGGER", trigger}, {"REASON", "unusable"}, {"LAST_CHECKPOINT", last}});
    }
    if (answer) finish({false, false, error.message()});
}

void WorkerCheckpoints::on_checkpoint_message() {
    if (!store_) return;
    if (spec_.method != CheckpointMethod::cooperative) {
        // The staging dir is criu's (maybe mid-dump) or llama-server's (the
        // daemon publishes it once the slots are saved): never published on
        // the worker's word.
        spdlog::debug("{}: CHECKPOINT=1 ignored (checkpoint method {})", worker_,
                      checkpoint_method_name(spec_.method));
        return;
    }
    bool answer = awaiting_answer();
    if (recording_ > 0) {
        deferred_ = true;  // handled once the previous one is judged
        return;
    }
    if (!answer && last_published_ && clock_.now() - *last_published_ < kMinUnrequestedGap) {
        spdlog::debug("{}: CHECKPOINT=1 within {} of the last checkpoint; ignored", worker_,
                      format_duration(kMinUnrequestedGap));
        return;
    }
    std::string trigger = answer ? pending_->trigger : "the worker itself";
    std::optional<double> seconds;
    if (answer) seconds = seconds_between(pending_->requested_at, clock_.now());
    publish_answer(seconds, trigger, answer);
}

void WorkerCheckpoints::publish_answer(std::optional<double> seconds, const std::string& trigger,
                                       bool answer) {
    auto taken = store_->take_staging();
    if (!taken) return report_unusable(trigger, taken.error(), answer);
    last_published_ = clock_.now();
    if (answer && seconds)
        last_answer_took_ =
            std::chrono::duration_cast<Duration>(std::chrono::duration<double>(*seconds));
    if (answer) {
        timeout_timer_->cancel();
        pending_->answered = true;
    }
    if (auto staging = store_->fresh_staging(uid_, gid_); !staging)
        spdlog::error("{}: no staging dir for the next checkpoint: {}", worker_,
                      staging.error().message());
    // Sealed, measured and judged (keep, max_age, quota) before it is
    // published: see judge_in_background.
    judge_in_background(seconds, trigger, answer);
}

BackgroundWork& WorkerCheckpoints::background() {
    if (!background_) background_ = std::make_unique<BackgroundWork>(io_);
    return *background_;
}

void WorkerCheckpoints::empty_trash_in_background() {
    auto dir = store_->dup_dir();
    if (!dir) return spdlog::warn("{}: {}", worker_, dir.error().message());
    auto fd = std::make_shared<UniqueFd>(std::move(*dir));
    background().run<Result<void>>([fd] { return CheckpointStore::empty_trash(fd->get()); },
                                   [worker = worker_](Result<void> r) {
                                       if (!r) spdlog::warn("{}: {}", worker, r.error().message());
                                   });
}

void WorkerCheckpoints::judge_in_background(std::optional<double> seconds, std::string trigger,
                                            bool answer) {
    auto dir = store_->dup_dir();
    if (!dir) {
        drop_taken(trigger, dir.error().message());
        return after_judging(answer, {false, false, dir.error().message()});
    }
    ++recording_;
    auto fd = std::make_shared<UniqueFd>(std::move(*dir));
    std::vector<uint64_t> older;
    for (const auto& c : store_->complete()) older.push_back(c.sequence);
    // The worker wrote it (criu: root); the worker may read it back.
    uid_t writer = uid_, reader = uid_;
    background().run<Judged>(
        [fd, writer, reader, older = std::move(older)] {
            Judged r;
            r.sealed = CheckpointStore::seal_incoming(fd->get(), writer, reader);
            if (r.sealed) r.bytes = exact_bytes(CheckpointStore::measure_incoming(fd->get()));
            r.older = measure_older(fd->get(), older);
            r.fs_bytes = CheckpointStore::filesystem_bytes(fd->get());
            r.trash = CheckpointStore::empty_trash(fd->get());
            return r;
        },
        [this, seconds, trigger, answer](Judged r) {
            --recording_;
            if (!store_) return after_judging(answer, {false, false, "no checkpoint store"});
            if (!r.trash) spdlog::warn("{}: {}", worker_, r.trash.error().message());
            if (!r.sealed) {
                std::string why =
                    "the checkpoint could not be sealed: " + r.sealed.error().message();
                drop_taken(trigger, why);
                return after_judging(answer, {false, false, why});
            }
            RetentionPlan plan = plan_for_new(r.bytes, r.older, r.fs_bytes, trigger);
            if (plan.refused) {
                if (auto d = store_->discard_incoming(); !d)
                    spdlog::error("{}: deleting the refused checkpoint: {}", worker_,
                                  d.error().message());
                return after_judging(answer, {false, false, refused_why_});
            }
            std::optional<LlamaRecord> saved_slots = taken_record_;
            auto published = publish_judged(plan, *r.bytes, seconds);
            if (!published) {
                drop_taken(trigger, published.error().message());
                return after_judging(answer, {false, false, published.error().message()});
            }
            Fields fields = {{"CHECKPOINT", published->path.string()},
                             {"CHECKPOINT_SEQUENCE", std::to_string(published->sequence)},
                             {"TRIGGER", trigger},
                             {"KEEP", std::to_string(spec_.keep)},
                             {"METHOD", checkpoint_method_name(spec_.method)},
                             {"CHECKPOINT_BYTES", std::to_string(*r.bytes)}};
            std::string numbers = format_size(*r.bytes);
            if (saved_slots) {
                fields.emplace_back("SLOTS_SAVED", std::to_string(saved_slots->slots.size()));
                fields.emplace_back("TOKENS_SAVED", std::to_string(saved_slots->tokens()));
                numbers += ", " + std::to_string(saved_slots->slots.size()) + " slots with " +
                           std::to_string(saved_slots->tokens()) + " tokens";
            }
            if (seconds) {
                fields.emplace_back("CHECKPOINT_SECONDS", seconds_text(*seconds));
                numbers += ", " + seconds_text(*seconds) + " s after the request";
            }
            emit_(EventKind::checkpoint_written,
                  "checkpoint " + std::to_string(published->sequence) + " written to " +
                      published->path.string() + " (" + trigger + ": " + numbers + ")",
                  std::move(fields));
            Outcome done{true, false, published->path.string()};
            done.bytes = *r.bytes;
            after_judging(answer, std::move(done));
        });
}

void WorkerCheckpoints::drop_taken(const std::string& trigger, const std::string& why) {
    if (auto r = store_->discard_incoming(); !r)
        spdlog::error("{}: deleting the taken checkpoint: {}", worker_, r.error().message());
    std::string last = last_good();
    emit_(
        EventKind::checkpoint_failed,
        "the checkpoint (" + trigger + ") was deleted: " + why + "; last good checkpoint: " + last,
        {{"TRIGGER", trigger},
         {"REASON", "unusable"},
         {"METHOD", checkpoint_method_name(spec_.method)},
         {"LAST_CHECKPOINT", last}});
}

void WorkerCheckpoints::after_judging(bool answer, Outcome outcome) {
    taken_record_.reset();  // published with its checkpoint, or dropped with it
    if (store_ && store_->take_trash_flag()) empty_trash_in_background();
    if (answer && pending_ && pending_->answered) finish(std::move(outcome));
    if (recording_ == 0 && std::exchange(deferred_, false) && signaller_) on_checkpoint_message();
}

RetentionPlan WorkerCheckpoints::plan_for_new(const Result<uint64_t>& bytes,
                                              const std::vector<MeasuredCheckpoint>& older,
                                              const Result<uint64_t>& fs_bytes,
                                              const std::string& trigger) {
    RetentionPlan plan;
    uint64_t quota = 0;
    if (!bytes) {
        plan.refused = true;
        plan.why = "the new checkpoint could not be measured against the checkpoint quota: " +
                   bytes.error().message();
    } else if (!fs_bytes && spec_.quota.percent != 0) {
        plan.refused = true;
        plan.why = "the checkpoint quota could not be computed: " + fs_bytes.error().message();
    } else {
        quota = quota_bytes(spec_.quota, fs_bytes ? *fs_bytes : 0);
        plan = plan_retention(older, {0, *bytes, std::nullopt},
                              {quota, static_cast<uint64_t>(spec_.keep), spec_.max_age});
    }
    if (plan.refused) {
        // The new one is never published; everything older stays as it was.
        std::string last = last_good();
        refused_why_ = plan.why;
        emit_(EventKind::checkpoint_failed,
              "the new checkpoint (" + trigger + ") was deleted: " + plan.why +
                  "; last good checkpoint: " + last,
              {{"TRIGGER", trigger},
               {"REASON", "quota"},
               {"CHECKPOINT_BYTES", bytes ? std::to_string(*bytes) : std::string("unknown")},
               {"QUOTA_BYTES", std::to_string(quota)},
               {"METHOD", checkpoint_method_name(spec_.method)},
               {"LAST_CHECKPOINT", last}});
    }
    return plan;
}

Result<StoredCheckpoint> WorkerCheckpoints::publish_judged(const RetentionPlan& plan,
                                                           uint64_t bytes,
                                                           std::optional<double> seconds) {
    auto published = store_->publish();
    if (!published) return published.error();
    // Its age for max_age counts from here (the info's mtime).
    if (auto dir = store_->dup_dir(); !dir)
        spdlog::warn("{}: {}", worker_, dir.error().message());
    else if (auto r =
                 CheckpointStore::write_info(dir->get(), published->sequence, {bytes, seconds});
             !r)
        spdlog::warn("{}: {}", worker_, r.error().message());
    // llama-server: the record of what the slot files were made with; a
    // checkpoint without it could not be restored, so none is published.
    if (auto record = std::exchange(taken_record_, std::nullopt)) {
        auto written = write_record_into(*published, *record);
        if (!written) {
            if (auto r = store_->retire(published->sequence); !r)
                spdlog::error("{}: retiring checkpoint {}: {}", worker_, published->sequence,
                              r.error().message());
            return plain_error("its llama-server record could not be written: " +
                               written.error().message());
        }
    }
    for (uint64_t sequence : plan.retire)
        if (auto r = store_->retire(sequence); !r)
            spdlog::error("{}: retiring checkpoint {}: {}", worker_, sequence, r.error().message());
    return published;
}

Result<void> WorkerCheckpoints::write_record_into(const StoredCheckpoint& checkpoint,
                                                  const LlamaRecord& record) {
    auto dir = store_->dup_dir();
    if (!dir) return dir.error();
    UniqueFd fd(::openat(dir->get(), CheckpointStore::sequence_name(checkpoint.sequence).c_str(),
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return errno_error("open " + checkpoint.path.string());
    return write_llama_record(fd.get(), record);
}

void WorkerCheckpoints::arm_sweep() {
    sweep_timer_->arm(kSweepInterval, [this] {
        sweep();
        arm_sweep();
    });
}

void WorkerCheckpoints::sweep() {
    // A checkpoint being judged retires older ones itself; the next sweep.
    if (recording_ > 0 || sweeping_) return;
    if (!store_) {
        // Checkpoints left by an earlier daemon age too, run or not.
        struct stat st;
        fs::path dir = paths_.state_dir / "checkpoints" / worker_;
        if (::lstat(dir.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) return;
        auto store = CheckpointStore::open(paths_.state_dir / "checkpoints", worker_);
        if (!store)
            return spdlog::warn("{}: checkpoint sweep: {}", worker_, store.error().message());
        store_.emplace(std::move(*store));
    }
    if (store_->complete().empty()) return;
    auto dir = store_->dup_dir();
    if (!dir) return spdlog::warn("{}: checkpoint sweep: {}", worker_, dir.error().message());
    auto fd = std::make_shared<UniqueFd>(std::move(*dir));
    std::vector<uint64_t> sequences;
    for (const auto& c : store_->complete()) sequences.push_back(c.sequence);
    sweeping_ = true;
    background().run<Swept>(
        [fd, sequences = std::move(sequences)] { return measure_all(fd->get(), sequences); },
        [this](Swept swept) {
            sweeping_ = false;
            if (!store_) return;
            uint64_t quota = UINT64_MAX;  // unknown: only max_age and keep apply
            if (swept.fs_bytes || spec_.quota.percent == 0)
                quota = quota_bytes(spec_.quota, swept.fs_bytes ? *swept.fs_bytes : 0);
            else
                spdlog::warn("{}: checkpoint sweep: {}", worker_, swept.fs_bytes.error().message());
            RetentionLimits limits{quota, static_cast<uint64_t>(spec_.keep), spec_.max_age};
            for (const auto& gone : plan_sweep(swept.all, limits)) {
                size_t i = 0;
                while (swept.all[i].sequence != gone.sequence) ++i;
                fs::path path = store_->path() / CheckpointStore::sequence_name(gone.sequence);
                bool known =
                    std::any_of(store_->complete().begin(), store_->complete().end(),
                                [&](const auto& c) { return c.sequence == gone.sequence; });
                if (!known) continue;  // retired meanwhile
                if (auto r = store_->retire(gone.sequence); !r) {
                    spdlog::error("{}: retiring checkpoint {}: {}", worker_, gone.sequence,
                                  r.error().message());
                    continue;
                }
                std::string why =
                    gone.reason == "max_age"
                        ? "older than checkpoint.max_age (" + format_duration(spec_.max_age) + ")"
                    : gone.reason == "quota"
                        ? "the checkpoints no longer fit in the checkpoint quota of " +
                              human_size(quota)
                        : "more than checkpoint.keep (" + std::to_string(spec_.keep) + ") kept";
                Fields fields = {{"CHECKPOINT", path.string()},
                                 {"CHECKPOINT_SEQUENCE", std::to_string(gone.sequence)},
                                 {"REASON", gone.reason},
                                 {"QUOTA_BYTES", std::to_string(quota)}};
                std::string size = "size unknown";
                if (swept.measured[i]) {
                    fields.emplace_back("CHECKPOINT_BYTES", std::to_string(swept.all[i].bytes));
                    size = format_size(swept.all[i].bytes);
                }
                if (swept.all[i].age)
                    fields.emplace_back(
                        "CHECKPOINT_AGE_SECONDS",
                        std::to_string(
                            std::chrono::duration_cast<std::chrono::seconds>(*swept.all[i].age)
                                .count()));
                emit_(EventKind::checkpoint_retired,
                      "checkpoint " + std::to_string(gone.sequence) + " (" + size +
                          ") deleted: " + why + "; last good checkpoint: " + last_good(),
                      std::move(fields));
            }
            if (store_->take_trash_flag()) empty_trash_in_background();
        });
}

void WorkerCheckpoints::arm_periodic() {
    periodic_timer_->cancel();
    if (spec_.interval <= Duration::zero()) return;
    periodic_timer_->arm(spec_.interval, [this] {
        if (!signaller_) return;
        if (!pending_) {
            auto r = request("periodic", "the worker keeps running", {}, false);
            if (!r) spdlog::warn("{}: periodic checkpoint: {}", worker_, r.error().message());
        }
        arm_periodic();
    });
}

WorkerCriu& WorkerCheckpoints::criu() {
    if (!criu_) criu_ = std::make_unique<WorkerCriu>(io_);
    return *criu_;
}

Result<void> WorkerCheckpoints::request_criu(Pending pending, bool thaw) {
    if (!store_ || !lookup_) return plain_error("no run to dump");
    Processes processes = lookup_();
    if (processes.main <= 0) return plain_error("no main process to dump");
    // The staging dir of a run that started in cooperative mode is the
    // worker's: criu (root) must not write there.
    struct stat st;
    fs::path staging = store_->staging_path();
    if (::lstat(staging.c_str(), &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return plain_error(staging.string() +
                           " is not root's (the method changed to criu while this run was up); "
                           "the next run can be dumped");
    if (auto r = signaller_(0, thaw); !r) return r;  // alive, and thawed if asked
    pending_ = std::move(pending);
    uint64_t generation = ++criu_generation_;
    WorkerCriu::Dump dump{processes.main, std::move(processes.all), paths_.procfs,
                          staging,        !pending_->then_stop,     spec_.timeout};
    criu().dump(std::move(dump), [this, generation](WorkerCriu::DumpOutcome outcome) {
        on_criu_dumped(generation, std::move(outcome));
    });
    return {};
}

void WorkerCheckpoints::on_criu_dumped(uint64_t generation, WorkerCriu::DumpOutcome outcome) {
    // The run ended first: its request has been answered.
    if (generation != criu_generation_ || !pending_ || !pending_->criu || pending_->answered)
        return;
    if (!outcome.result) {
        std::string last = last_good();
        std::string why = outcome.result.error().message();
        emit_(EventKind::checkpoint_failed,
              "criu could not checkpoint the worker (" + pending_->trigger + "): " + why + "; " +
                  pending_->if_late + "; last good checkpoint: " + last,
              {{"TRIGGER", pending_->trigger},
               {"REASON", outcome.preflight_refused ? "criu-refused" : "criu-failed"},
               {"METHOD", "criu"},
               {"LAST_CHECKPOINT", last}});
        // A partial dump is never offered: the staging dir starts afresh.
        if (auto staging = store_->fresh_staging(uid_, gid_); !staging)
            spdlog::error("{}: {}", worker_, staging.error().message());
        if (store_->take_trash_flag()) empty_trash_in_background();
        return finish({false, false, why});
    }
    publish_answer(seconds_between(pending_->requested_at, clock_.now()), pending_->trigger, true);
}

void WorkerCheckpoints::restore_by_criu(const RunDirs& dirs, std::shared_ptr<UniqueFd> cgroup_dir,
                                        std::string cgroup_in_proc,
                                        std::shared_ptr<UniqueFd> output, Restored done) {
    if (!offered_ || !dirs.criu_restore) return done(plain_error("no criu checkpoint to restore"));
    StoredCheckpoint from = *offered_;
    emit_(EventKind::checkpoint_restoring,
          "restoring checkpoint " + std::to_string(from.sequence) + " from " + from.path.string() +
              " with criu",
          {{"CHECKPOINT", from.path.string()},
           {"CHECKPOINT_SEQUENCE", std::to_string(from.sequence)},
           {"METHOD", "criu"}});
    TimePoint started = clock_.now();
    WorkerCriu::Restore restore{paths_.procfs,         *dirs.criu_restore,        dirs.criu_record,
                                std::move(cgroup_dir), std::move(cgroup_in_proc), std::move(output),
                                spec_.timeout};
    criu().restore(std::move(restore), [this, from, started,
                                        done = std::move(done)](Result<SpawnedProcess> r) {
        double seconds = seconds_between(started, clock_.now());
        if (r) {
            criu_restore_seconds_ = seconds;
        } else {
            // A refused image holds what a swapped path named: it is retired
            // so that no later start is offered it again.
            bool refused = r.error().what.starts_with(kCriuRestoreRefused);
            bool retired = refused && store_ && store_->retire(from.sequence).ok();
            emit_(EventKind::checkpoint_failed,
                  "criu could not restore checkpoint " + std::to_string(from.sequence) + ": " +
                      r.error().message() + (retired ? "; the image is deleted" : "") +
                      "; starting the command afresh",
                  {{"CHECKPOINT", from.path.string()},
                   {"REASON", refused ? "criu-restore-refused" : "criu-restore-failed"},
                   {"METHOD", "criu"},
                   {"LAST_CHECKPOINT", last_good()}});
            offered_.reset();
            if (retired && store_->take_trash_flag()) empty_trash_in_background();
        }
        done(std::move(r));
    });
}

WorkerLlamaSlots& WorkerCheckpoints::llama() {
    if (!llama_) llama_ = std::make_unique<WorkerLlamaSlots>(io_);
    return *llama_;
}

Result<WorkerLlamaSlots::Server> WorkerCheckpoints::llama_server() const {
    if (!engine_ || engine_->kind != EngineKind::llama_server)
        return plain_error("the worker has no 'engine: {kind: llama-server}'");
    WorkerLlamaSlots::Server server{*engine_, {}, "/", spec_.timeout};
    if (api_key_file_) {
        auto key = read_credential_secret(*api_key_file_);
        if (!key) return key.error();
        server.bearer = std::move(*key);
    }
    // The model path /props names is the server's: looked up through its root.
    if (lookup_)
        if (pid_t main = lookup_().main; main > 0)
            server.model_root = paths_.procfs / std::to_string(main) / "root";
    return server;
}

Result<void> WorkerCheckpoints::request_llama(Pending pending, bool thaw) {
    if (!store_) return plain_error("no run to checkpoint");
    if (!ready_) return plain_error("llama-server is not ready yet (its slots cannot be saved)");
    if (restoring_) return plain_error("its slots are being restored from the last checkpoint");
    auto server = llama_server();
    if (!server) return server.error();
    if (auto r = signaller_(0, thaw); !r) return r;  // alive, and thawed if asked
    pending_ = std::move(pending);
    taken_record_.reset();
    timeout_timer_->arm(limit(), [this] { on_timeout(); });
    llama().save(std::move(*server),
                 [this](Result<LlamaRecord> saved) { on_llama_saved(std::move(saved)); });
    return {};
}

void WorkerCheckpoints::on_llama_saved(Result<LlamaRecord> saved) {
    if (!pending_ || !pending_->llama || pending_->answered) return;
    if (!saved) {
        // Whatever the server wrote before the error is dropped: the staging
        // dir starts afresh, the older checkpoints stay.
        if (auto staging = store_->fresh_staging(uid_, gid_); !staging)
            spdlog::error("{}: {}", worker_, staging.error().message());
        if (store_->take_trash_flag()) empty_trash_in_background();
        std::string last = last_good();
        std::string why = saved.error().message();
        emit_(EventKind::checkpoint_failed,
              "llama-server could not save its slots (" + pending_->trigger + "): " + why + "; " +
                  pending_->if_late + "; last good checkpoint: " + last,
              {{"TRIGGER", pending_->trigger},
               {"REASON", "engine-error"},
               {"METHOD", "llama-server"},
               {"OPERATION", "save"},
               {"LAST_CHECKPOINT", last}});
        return finish({false, false, why});
    }
    taken_record_ = std::move(*saved);
    // From here as a CHECKPOINT=1: taken, sealed, judged, published.
    publish_answer(seconds_between(pending_->requested_at, clock_.now()), pending_->trigger, true);
}

void WorkerCheckpoints::restore_llama(TimePoint started_at) {
    StoredCheckpoint from = *offered_;
    auto not_restored = [this, from](const std::string& reason, const std::string& why) {
        restoring_ = false;
        emit_(EventKind::checkpoint_failed,
              "the slots of checkpoint " + std::to_string(from.sequence) +
                  " are not restored: " + why + "; llama-server goes on without them",
              {{"CHECKPOINT", from.path.string()},
               {"CHECKPOINT_SEQUENCE", std::to_string(from.sequence)},
               {"REASON", reason},
               {"METHOD", "llama-server"},
               {"OPERATION", "restore"},
               {"LAST_CHECKPOINT", last_good()}});
    };
    auto dir = store_ ? store_->dup_dir() : Result<UniqueFd>(plain_error("no checkpoint store"));
    if (!dir) return not_restored("engine-error", dir.error().message());
    UniqueFd sealed(::openat(dir->get(), CheckpointStore::sequence_name(from.sequence).c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd staging(::openat(dir->get(), kCheckpointStagingName,
                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sealed || !staging)
        return not_restored("engine-error", errno_error("opening the checkpoint").message());
    auto record = read_llama_record(sealed.get());
    if (!record)
        return not_restored("engine-record",
                            "it holds no readable llama-server record (another method wrote "
                            "it, or the record is damaged)");
    auto server = llama_server();
    if (!server) return not_restored("engine-error", server.error().message());
    restore_timer_->arm(spec_.timeout, [this, not_restored] {
        if (llama_) llama_->cancel();
        not_restored("timeout",
                     "llama-server did not restore them within " + format_duration(spec_.timeout));
    });
    const TimePoint requests_began = clock_.now();
    llama().restore(std::move(*server), std::move(*record), std::move(sealed), std::move(staging),
                    [this, from, started_at, requests_began](WorkerLlamaSlots::Restored restored) {
                        on_llama_restored(from, started_at, requests_began, std::move(restored));
                    });
}

void WorkerCheckpoints::on_llama_restored(const StoredCheckpoint& from, TimePoint started_at,
                                          TimePoint requests_began,
                                          WorkerLlamaSlots::Restored restored) {
    restore_timer_->cancel();
    restoring_ = false;
    Fields fields = {{"CHECKPOINT", from.path.string()},
                     {"CHECKPOINT_SEQUENCE", std::to_string(from.sequence)},
                     {"METHOD", "llama-server"}};
    std::string checkpoint = "checkpoint " + std::to_string(from.sequence);
    if (!restored.differences.empty()) {
        std::string differences;
        for (const auto& d : restored.differences)
            differences += (differences.empty() ? "" : "; ") + d;
        fields.insert(fields.end(), {{"REASON", "engine-mismatch"},
                                     {"OPERATION", "restore"},
                                     {"DIFFERENCES", differences},
                                     {"LAST_CHECKPOINT", last_good()}});
        return emit_(EventKind::checkpoint_failed,
                     "the slots of " + checkpoint +
                         " are not restored: llama-server is not the "
                         "one they were saved from: " +
                         differences + "; it goes on without them",
                     std::move(fields));
    }
    std::string counts = std::to_string(restored.slots) + " of " + std::to_string(restored.wanted) +
                         " slots (" + std::to_string(restored.tokens) + " tokens)";
    fields.emplace_back("SLOTS_RESTORED", std::to_string(restored.slots));
    fields.emplace_back("TOKENS_RESTORED", std::to_string(restored.tokens));
    if (!restored.result) {
        fields.insert(fields.end(), {{"REASON", "engine-error"},
                                     {"OPERATION", "restore"},
                                     {"LAST_CHECKPOINT", last_good()}});
        return emit_(EventKind::checkpoint_failed,
                     "llama-server could not restore every slot of " + checkpoint + " (" +
                         restored.result.error().message() + "); restored " + counts +
                         "; it goes on with those",
                     std::move(fields));
    }
    double seconds = seconds_between(started_at, clock_.now());
    fields.emplace_back("RESTORE_SECONDS", seconds_text(seconds));
    // The restore requests alone, from the first to the last answer: what
    // the checkpoint saves the next run, against recomputing the tokens.
    fields.emplace_back("SLOTS_RESTORE_SECONDS",
                        seconds_text(seconds_between(requests_began, clock_.now())));
    emit_(EventKind::checkpoint_restored,
          "restored " + counts + " into llama-server from " + checkpoint + ", " +
              seconds_text(seconds) + " s after starting",
          std::move(fields));
}

}  // namespace infervisor
