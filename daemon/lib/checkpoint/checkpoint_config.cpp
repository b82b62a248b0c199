#include "checkpoint/checkpoint_config.h"

#include "base/signal_names.h"

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
    else
        errors.add(map.take("method")->Mark(),
                   "unknown checkpoint method '" + text + "'; expected cooperative or criu");
}

}  // namespace

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
    map.finish();
}

}  // namespace infervisor
