#include "checkpoint/checkpoint_config.h"

#include "base/signal_names.h"
#include "base/units.h"

namespace infervisor {

namespace {

void parse_signal_key(YamlMap& map, CheckpointSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("signal", text)) return;
    auto sig = parse_signal(text);
    if (!sig)
        errors.add(map.take("signal")->Mark(), "unknown signal '" + text + "'");
    else if (*sig == SIGKILL || *sig == SIGSTOP)
        errors.add(map.take("signal")->Mark(),
                   "checkpoint signal " + text + " cannot be caught; use e.g. SIGUSR1");
    else
        spec.signal = *sig;
}

void parse_method_key(YamlMap& map, CheckpointSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("method", text)) return;
    if (text == "cooperative")
        spec.method = CheckpointMethod::cooperative;
    else if (text == "criu")
        spec.method = CheckpointMethod::criu;
    else if (text == "llama-server")
        spec.method = CheckpointMethod::llama_server;
    else
        errors.add(map.take("method")->Mark(), "unknown checkpoint method '" + text +
                                                   "'; expected cooperative, criu or llama-server");
}

// "25%" (1..100 percent of the checkpoint file system) or a size ("20G").
void parse_quota_key(YamlMap& map, CheckpointSpec& spec, ConfigErrors& errors) {
    std::string text;
    if (!map.get_string("quota", text)) return;
    auto mark = map.take("quota")->Mark();
    if (!text.empty() && text.back() == '%') {
        std::string digits = text.substr(0, text.size() - 1);
        bool numeric = !digits.empty() && digits.size() <= 3 &&
                       digits.find_first_not_of("0123456789") == std::string::npos;
        int percent = numeric ? std::stoi(digits) : 0;
        if (percent < 1 || percent > 100)
            return errors.add(mark, "checkpoint quota '" + text +
                                        "' must be 1% to 100% of the checkpoint file system");
        spec.quota = CheckpointQuota{percent, 0};
        return;
    }
    auto size = parse_size(text);
    if (!size)
        return errors.add(mark, "checkpoint quota '" + text +
                                    "': expected a size (e.g. 20G) or a percentage (e.g. 25%)");
    if (!*size)
        return errors.add(mark,
                          "checkpoint quota cannot be 'max': checkpoints are always "
                          "bounded; use e.g. 100%");
    if (**size == 0) return errors.add(mark, "checkpoint quota must be positive");
    spec.quota = CheckpointQuota{0, **size};
}

}  // namespace

const char* checkpoint_method_name(CheckpointMethod method) {
    switch (method) {
        case CheckpointMethod::cooperative:
            return "cooperative";
        case CheckpointMethod::criu:
            return "criu";
        case CheckpointMethod::llama_server:
            return "llama-server";
    }
    return "cooperative";
}

void parse_checkpoint_keys(YamlMap& worker, CheckpointSpec& spec, ConfigErrors& errors) {
    auto node = worker.take("checkpoint");
    if (!node) return;
    YamlMap map(*node, errors, "'checkpoint'");
    if (!map.valid()) return;
    parse_method_key(map, spec, errors);
    parse_signal_key(map, spec, errors);
    if (map.get_duration("timeout", spec.timeout) && spec.timeout <= Duration::zero())
        errors.add(map.take("timeout")->Mark(), "checkpoint timeout must be positive");
    if (map.get_duration("interval", spec.interval) && spec.interval < Duration::zero())
        errors.add(map.take("interval")->Mark(), "checkpoint interval must not be negative");
    map.get_int("keep", spec.keep, 1, 100);
    parse_quota_key(map, spec, errors);
    if (map.get_duration("max_age", spec.max_age) && spec.max_age < Duration::zero())
        errors.add(map.take("max_age")->Mark(), "checkpoint max_age must not be negative");
    map.finish();
}

}  // namespace infervisor
