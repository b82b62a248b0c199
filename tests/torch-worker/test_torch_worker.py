#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The example torch worker (etc/examples/torch-worker.py) against
llama-server's HTTP API as tools/server/server.cpp answers it: completions
that continue a slot's context, slot save/erase/restore and the continued
context after a restore, the error answers, /health while loading, /props,
the llamacpp:* metrics, the stuck mode, the API key, the cooperative
checkpoint VM 146 uses, and with --api vllm vLLM's sleep mode (dev
endpoints, levels 1 and 2), vllm:* metrics and /v1/completions, and with
--api ollama Ollama's /api/ps and /api/generate (load, unload, a
completion). Each case starts the real worker (tiny model, a free port) and
drives it over HTTP.

Usage: test_torch_worker.py WORKER (meson passes the source tree's script).
Needs Debian's python3-torch: without it the suite fails and says so.
"""

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

WORKER = None  # set from argv in __main__
TINY = ["--dim", "16", "--layers", "2", "--vocab", "256", "--serve-interval-ms", "0"]


def torch_missing():
    try:
        import torch  # noqa: F401
    except ImportError:
        return True
    return False


class Worker:
    """A running torch worker: its port, its stdout lines, its process."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([sys.executable, WORKER, "--port", "0", *TINY, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, **(env or {})})
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        listening = self.wait_line(r"listening on http://127\.0\.0\.1:(\d+)")
        self.port = int(re.search(r":(\d+)$", listening).group(1))

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)  # the end of its output
            self.cond.notify_all()

    def wait_line(self, pattern):
        """The first output line matching `pattern`; fails if it exits first."""
        with self.cond:
            while True:
                for line in self.lines:
                    if line is None:
                        raise AssertionError(f"worker exited before a line matching {pattern!r}: "
                                             + "\n".join(l for l in self.lines if l))
                    if re.search(pattern, line):
                        return line
                self.cond.wait()

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or text) of one request."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req) as res:
                status, raw, kind = res.status, res.read(), res.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            status, raw, kind = e.code, e.read(), e.headers.get("Content-Type", "")
        return status, (json.loads(raw) if kind.startswith("application/json") else raw.decode())

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def wait_ready(self):
        while self.get("/health")[0] != 200:
            time.sleep(0.05)

    def complete(self, prompt, n_predict, id_slot=-1):
        status, answer = self.post("/completion", {"prompt": prompt, "n_predict": n_predict,
                                                   "id_slot": id_slot, "cache_prompt": True})
        assert status == 200, answer
        return answer

    def metrics(self):
        """{name: (type, value)} of the llamacpp:* series."""
        status, text = self.get("/metrics")
        assert status == 200, text
        types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
        return {name: (types.get(name), float(value))
                for name, value in re.findall(r"^(llamacpp:\S+) (\S+)$", text, re.M)}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        with self.cond:
            while not self.lines or self.lines[-1] is not None:
                self.cond.wait()
        self.proc.stdout.close()


def error(code, message, kind):
    return {"error": {"code": code, "message": message, "type": kind}}


class TorchWorkerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="torch-worker-test.")
        self.slots = os.path.join(self.dir, "slots")
        os.mkdir(self.slots)
        self.workers = []

    def tearDown(self):
        for w in self.workers:
            w.stop()
        shutil.rmtree(self.dir)

    def start(self, *args, ready=True, **kw):
        w = Worker(*args, **kw)
        self.workers.append(w)
        if ready:
            w.wait_ready()
        return w

    def llama(self, *extra):
        """A worker as llama-server: 2 slots, slot files, metrics."""
        return self.start("--parallel", "2", "-c", "512", "--slot-save-path", self.slots,
                          "--metrics", *extra)

    # -- loading, /props --------------------------------------------------------

    def test_health_is_503_with_llama_servers_body_while_loading_then_200(self):
        w = self.start("--load-delay-ms", "3000", ready=False)
        status, body = w.get("/health")
        self.assertEqual((503, {"error": {"message": "Loading model", "type": "unavailable_error",
                                          "code": 503}}), (status, body))
        self.assertEqual(503, w.get("/slots")[0], "every endpoint waits for the model")
        w.wait_ready()
        self.assertEqual((200, {"status": "ok"}), w.get("/health"))

    def test_props_names_the_model_the_build_and_the_context(self):
        model = os.path.join(self.dir, "model.gguf")
        with open(model, "wb") as f:
            f.write(b"weights")
        w = self.llama("-m", model)
        status, props = w.get("/props")
        self.assertEqual(200, status)
        self.assertEqual(model, props["model_path"])
        self.assertEqual(256, props["default_generation_settings"]["n_ctx"])  # 512 over 2 slots
        self.assertEqual(2, props["total_slots"])
        self.assertRegex(props["build_info"], r"^b\d+-")

    # -- completions continue a slot's context ----------------------------------

    def test_a_completion_takes_the_common_prefix_from_the_slots_cache(self):
        w = self.llama()
        first = w.complete("The first turn.", 8, id_slot=0)
        self.assertEqual(0, first["id_slot"])
        self.assertEqual(16, first["tokens_evaluated"])  # BOS and 15 bytes
        self.assertEqual(0, first["timings"]["cache_n"])
        self.assertEqual(16, first["timings"]["prompt_n"])
        self.assertEqual(8, first["tokens_predicted"])
        # The last sampled token is not decoded yet, as in llama-server.
        self.assertEqual(16 + 7, first["tokens_cached"])
        conversation = "The first turn." + first["content"] + " Next."
        second = w.complete(conversation, 4, id_slot=0)
        self.assertEqual(23, second["timings"]["cache_n"], "the first turn is taken from the cache")
        self.assertEqual(len(conversation) + 1 - 23, second["timings"]["prompt_n"])
        other = w.complete(conversation, 4, id_slot=1)
        self.assertEqual(0, other["timings"]["cache_n"], "slot 1 has its own context")
        self.assertEqual(second["content"], other["content"], "same context, same tokens")

    def test_a_restored_slot_continues_its_context_without_recomputing_it(self):
        w = self.llama()
        first = w.complete("Remember this.", 12, id_slot=0)
        conversation = "Remember this." + first["content"] + " And then?"
        cached = first["tokens_cached"]

        status, saved = w.post("/slots/0?action=save", {"filename": "slot-0.bin"})
        self.assertEqual(200, status, saved)
        self.assertEqual({"id_slot", "filename", "n_saved", "n_written", "timings"}, set(saved))
        self.assertEqual((0, "slot-0.bin", cached), (saved["id_slot"], saved["filename"], saved["n_saved"]))
        self.assertEqual({"save_ms"}, set(saved["timings"]))
        path = os.path.join(self.slots, "slot-0.bin")
        self.assertEqual(saved["n_written"], os.path.getsize(path))
        self.assertEqual(os.getuid(), os.stat(path).st_uid, "written as the worker's own uid")

        uninterrupted = w.complete(conversation, 6, id_slot=1)  # the same context, from scratch

        self.assertEqual((200, {"id_slot": 0, "n_erased": cached}), w.post("/slots/0?action=erase"))
        self.assertEqual((200, {"id_slot": 0, "n_erased": 0}), w.post("/slots/0?action=erase"),
                         "nothing left to erase")

        status, restored = w.post("/slots/0?action=restore", {"filename": "slot-0.bin"})
        self.assertEqual(200, status, restored)
        self.assertEqual({"id_slot": 0, "filename": "slot-0.bin", "n_restored": cached,
                          "n_read": saved["n_written"]},
                         {k: v for k, v in restored.items() if k != "timings"})
        self.assertEqual({"restore_ms"}, set(restored["timings"]))

        continued = w.complete(conversation, 6, id_slot=0)
        self.assertEqual(cached, continued["timings"]["cache_n"], "the restored tokens are not recomputed")
        self.assertEqual(len(conversation) + 1 - cached, continued["timings"]["prompt_n"])
        self.assertEqual(uninterrupted["content"], continued["content"], "the same context goes on")
        self.assertEqual(uninterrupted["timings"]["prompt_n"],
                         continued["timings"]["prompt_n"] + continued["timings"]["cache_n"])

    def test_slots_lists_each_slot_with_its_context(self):
        w = self.llama()
        w.complete("abc", 2, id_slot=1)
        status, slots = w.get("/slots")
        self.assertEqual(200, status)
        self.assertEqual([0, 1], [s["id"] for s in slots])
        self.assertEqual({"id", "n_ctx", "speculative", "is_processing"}, set(slots[0]))
        self.assertEqual(256, slots[1]["n_ctx"])
        self.assertFalse(slots[1]["is_processing"])
        self.assertEqual(2, slots[1]["next_token"][0]["n_decoded"])
        self.assertFalse(slots[1]["next_token"][0]["has_next_token"])

    # -- slot files from another model ------------------------------------------

    def test_a_slot_file_of_another_shape_or_version_is_refused_and_the_slot_cleared(self):
        w = self.llama()
        w.complete("shape", 4, id_slot=0)
        self.assertEqual(200, w.post("/slots/0?action=save", {"filename": "s.bin"})[0])
        w.stop()
        w2 = self.start("--dim", "32", "--slot-save-path", self.slots)  # the later --dim wins
        w2.complete("something", 2, id_slot=0)
        refused = error(400, "Unable to restore slot, no available space in KV cache or invalid slot "
                        "save file", "invalid_request_error")
        self.assertEqual((400, refused), w2.post("/slots/0?action=restore", {"filename": "s.bin"}))
        self.assertEqual(0, w2.complete("something", 1, id_slot=0)["timings"]["cache_n"],
                         "a failed restore clears the slot")

        path = os.path.join(self.slots, "s.bin")
        with open(path, "r+b") as f:
            f.seek(4)
            f.write(struct.pack("<I", 99))  # another format version
        w3 = self.start("--slot-save-path", self.slots)
        self.assertEqual((400, refused), w3.post("/slots/0?action=restore", {"filename": "s.bin"}))

    def test_a_slot_file_of_another_model_of_the_same_shape_loads_as_llama_cpps_does(self):
        # llama.cpp's loader checks the shape, not the weights: refusing it is
        # the supervisor's job (the sidecar), which is why it must exist.
        w = self.llama("--seed", "1")
        w.complete("weights", 4, id_slot=0)
        self.assertEqual(200, w.post("/slots/0?action=save", {"filename": "s.bin"})[0])
        other = self.llama("--seed", "2")
        status, restored = other.post("/slots/0?action=restore", {"filename": "s.bin"})
        self.assertEqual(200, status, restored)
        self.assertEqual(8 + 3, restored["n_restored"])

    # -- error answers ----------------------------------------------------------

    def test_slot_actions_answer_llama_servers_errors(self):
        w = self.llama()
        bad_id = error(400, "Invalid slot ID", "invalid_request_error")
        self.assertEqual((400, bad_id), w.post("/slots/x?action=erase"))
        self.assertEqual((400, bad_id), w.post("/slots/7?action=erase"))
        self.assertEqual((400, bad_id), w.post("/slots/-1?action=save", {"filename": "a"}))
        self.assertEqual((400, bad_id), w.post("/slots/99999999999?action=erase"))
        self.assertEqual((400, error(400, "Invalid action", "invalid_request_error")),
                         w.post("/slots/0?action=dump"))
        self.assertEqual((400, error(400, "Invalid action", "invalid_request_error")),
                         w.post("/slots/0"))
        bad_name = error(400, "Invalid filename", "invalid_request_error")
        for name in ["", "../x", "a/b", "a\\b", "..", ".", "a.", " a", "a ", "a:b", "a*", "a?", 'a"',
                     "a<", "a>", "a|", "a\nb", "a\x7f", "a\u0085", "a\u2215b", "a\ufffd", "\ufeffa",
                     "x" * 256, "a..b"]:
            with self.subTest(name=name):
                self.assertEqual((400, bad_name), w.post("/slots/0?action=save", {"filename": name}))
                self.assertEqual((400, bad_name), w.post("/slots/0?action=restore", {"filename": name}))
        self.assertEqual([], os.listdir(self.slots), "nothing written for a refused name")
        self.assertEqual(200, w.post("/slots/0?action=save", {"filename": "é-ok.bin"})[0])
        self.assertEqual(["é-ok.bin"], os.listdir(self.slots))
        status, missing = w.post("/slots/0?action=restore", {"filename": "absent.bin"})
        self.assertEqual((400, "invalid_request_error"), (status, missing["error"]["type"]))
        status, body = w.post("/slots/0?action=save", {})
        self.assertEqual((500, "server_error"), (status, body["error"]["type"]))
        self.assertIn("filename", body["error"]["message"])
        status, body = w.post("/slots/0?action=save", b"not json")
        self.assertEqual((500, "server_error"), (status, body["error"]["type"]))
        self.assertEqual((404, {"error": {"message": "File Not Found", "type": "not_found_error",
                                          "code": 404}}), w.get("/nowhere"))
        status, body = w.post("/completion", {"prompt": "x" * 300, "n_predict": 1})
        self.assertEqual((400, "exceed_context_size_error"), (status, body["error"]["type"]))

    def test_a_save_that_cannot_be_written_answers_n_written_0_as_llama_server_does(self):
        # llama_state_seq_save_file returns 0 on an error and the slot save
        # task answers it as a success: a supervisor must check n_written.
        w = self.start("--slot-save-path", os.path.join(self.dir, "missing"))
        w.complete("unsaved", 2, id_slot=0)
        status, saved = w.post("/slots/0?action=save", {"filename": "s.bin"})
        self.assertEqual(200, status)
        self.assertEqual((1 + 7 + 1, 0), (saved["n_saved"], saved["n_written"]))  # BOS, 7 bytes, 1 of 2 predicted

    def test_without_slot_save_path_or_metrics_the_endpoints_answer_501(self):
        w = self.start()
        self.assertEqual((501, error(501, "This server does not support slots action. Start it with "
                                     "`--slot-save-path`", "not_supported_error")),
                         w.post("/slots/0?action=save", {"filename": "a"}))
        self.assertEqual((501, error(501, "This server does not support metrics endpoint. Start it "
                                     "with `--metrics`", "not_supported_error")), w.get("/metrics"))

    def test_a_multimodal_server_refuses_slot_actions(self):
        w = self.start("--slot-save-path", self.slots, "--mmproj", "vision.gguf")
        self.assertEqual((501, error(501, "This feature is not supported by multimodal",
                                     "not_supported_error")),
                         w.post("/slots/0?action=save", {"filename": "a"}))

    def test_the_api_key_guards_all_but_health(self):
        w = self.start("--api-key", "sesame", "--slot-save-path", self.slots)
        self.assertEqual((200, {"status": "ok"}), w.get("/health"))
        self.assertEqual((401, {"error": {"message": "Invalid API Key", "type": "authentication_error",
                                          "code": 401}}), w.get("/props"))
        self.assertEqual(401, w.post("/slots/0?action=erase")[0])
        self.assertEqual(200, w.get("/props", headers={"Authorization": "Bearer sesame"})[0])
        self.assertEqual(200, w.get("/slots", headers={"X-Api-Key": "sesame"})[0])


    # -- vLLM's API (--api vllm): sleep mode, metrics, completions ---------------

    def vllm(self, *extra, dev_mode=True):
        """A worker as vLLM with --enable-sleep-mode (and the dev endpoints)."""
        env = {"VLLM_SERVER_DEV_MODE": "1"} if dev_mode else {"VLLM_SERVER_DEV_MODE": "0"}
        return self.start("--api", "vllm", "--enable-sleep-mode", "-c", "512", *extra, env=env)

    @staticmethod
    def vllm_complete(w, prompt, max_tokens):
        return w.post("/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": max_tokens})

    def test_vllm_health_is_an_empty_200_and_completions_are_openais(self):
        w = self.vllm()
        self.assertEqual((200, ""), w.get("/health"))
        status, answer = self.vllm_complete(w, "hello", 5)
        self.assertEqual(200, status, answer)
        self.assertEqual("text_completion", answer["object"])
        self.assertEqual(5, len(answer["choices"][0]["text"]))
        self.assertEqual("length", answer["choices"][0]["finish_reason"])
        self.assertEqual({"prompt_tokens": 6, "completion_tokens": 5, "total_tokens": 11},
                         answer["usage"])
        self.assertEqual((404, {"detail": "Not Found"}), w.get("/slots"), "no llama-server routes")
        self.assertEqual(404, w.post("/completion", {"prompt": "x"})[0])

    def test_vllm_sleep_level_1_drops_the_kv_cache_and_the_wake_answers_as_before(self):
        # Its own chat serves a token every 20 ms: it pauses while asleep.
        w = self.vllm("--serve-interval-ms", "20", "--tokens-per-request", "1")
        _, before = self.vllm_complete(w, "the same prompt", 8)
        self.assertGreater(self.vllm_metrics(w)["vllm:kv_cache_usage_perc"][1], 0)
        self.assertEqual((200, {"is_sleeping": False}), w.get("/is_sleeping"))

        self.assertEqual((200, ""), w.post("/sleep?level=1"))
        line = w.wait_line(r"^sleeping \(level 1\): KV cache of (\d+) KiB dropped, weights of "
                           r"(\d+) KiB copied aside$")
        self.assertGreater(int(re.search(r"of (\d+) KiB dropped", line).group(1)), 0)
        self.assertEqual((200, {"is_sleeping": True}), w.get("/is_sleeping"))
        self.assertEqual(0.0, self.vllm_metrics(w)["vllm:kv_cache_usage_perc"][1])
        status, refused = self.vllm_complete(w, "the same prompt", 8)
        self.assertEqual(503, status)
        self.assertEqual("ServiceUnavailableError", refused["error"]["type"])
        self.assertEqual((200, ""), w.post("/sleep?level=1"), "asleep already: nothing done")

        self.assertEqual((200, ""), w.post("/wake_up"))
        w.wait_line(r"^woken up \(from level 1\)$")
        self.assertEqual((200, {"is_sleeping": False}), w.get("/is_sleeping"))
        _, after = self.vllm_complete(w, "the same prompt", 8)
        self.assertEqual(before["choices"][0]["text"], after["choices"][0]["text"],
                         "the same weights back")
        self.assertEqual((200, ""), w.post("/wake_up"), "awake already: nothing done")
        with w.cond:  # until its chat serves again, after the wake
            while not any(l and l.startswith("served request")
                          for l in w.lines[w.lines.index("woken up (from level 1)"):]):
                self.assertNotIn(None, w.lines, "the worker exited")
                w.cond.wait()
            asleep = w.lines[w.lines.index(line):w.lines.index("woken up (from level 1)")]
        self.assertEqual([], [l for l in asleep if l.startswith("served request")])

    def test_vllm_sleep_level_2_drops_the_weights_and_the_wake_rebuilds_them(self):
        w = self.vllm()
        _, before = self.vllm_complete(w, "abc", 6)
        self.assertEqual((200, ""), w.post("/sleep?level=2"))
        w.wait_line(r"^sleeping \(level 2\): KV cache of \d+ KiB dropped, weights of \d+ KiB "
                    r"dropped$")
        self.assertEqual((200, {"is_sleeping": True}), w.get("/is_sleeping"))
        self.assertEqual((200, ""), w.post("/wake_up?tags=weights&tags=kv_cache"))
        _, after = self.vllm_complete(w, "abc", 6)
        self.assertEqual(before["choices"][0]["text"], after["choices"][0]["text"])

    def test_vllm_sleep_endpoints_need_dev_mode_and_sleep_mode_as_vllms_do(self):
        off = self.vllm(dev_mode=False)
        for method, path in (("POST", "/sleep?level=1"), ("POST", "/wake_up"),
                             ("GET", "/is_sleeping")):
            self.assertEqual((404, {"detail": "Not Found"}), off.request(method, path), path)
        no_sleep_mode = self.start("--api", "vllm", env={"VLLM_SERVER_DEV_MODE": "1"})
        self.assertEqual((500, "Internal Server Error"), no_sleep_mode.post("/sleep?level=1"))
        self.assertEqual((200, {"is_sleeping": False}), no_sleep_mode.get("/is_sleeping"))
        self.assertEqual((405, {"detail": "Method Not Allowed"}), no_sleep_mode.get("/sleep"))

    # -- Ollama's API (--api ollama): what is loaded, load, unload ---------------

    def ollama(self, *extra):
        return self.start("--api", "ollama", "-c", "512", *extra, ready=False)

    def test_ollama_loads_at_a_request_and_unloads_as_ollama_stop_asks(self):
        w = self.ollama()
        self.assertEqual((200, "Ollama is running"), w.get("/"))
        self.assertEqual((200, {"models": []}), w.get("/api/ps"), "nothing loaded at the start")
        status, loaded = w.post("/api/generate", {"model": "torch-worker:latest"})
        self.assertEqual(200, status, loaded)
        self.assertEqual(("load", True, ""), (loaded["done_reason"], loaded["done"], loaded["response"]))
        status, ps = w.get("/api/ps")
        self.assertEqual(["torch-worker:latest"], [m["name"] for m in ps["models"]])
        self.assertGreater(ps["models"][0]["size"], 0)
        status, answer = w.post("/api/generate", {"model": "torch-worker:latest", "prompt": "hi",
                                                  "stream": False, "options": {"num_predict": 5}})
        self.assertEqual(200, status, answer)
        self.assertEqual((5, "length", 3), (len(answer["response"]), answer["done_reason"],
                                            answer["prompt_eval_count"]))
        status, unloaded = w.post("/api/generate", {"model": "torch-worker:latest", "keep_alive": 0})
        self.assertEqual((200, "unload", True), (status, unloaded["done_reason"], unloaded["done"]))
        w.wait_line(r"^model unloaded$")
        self.assertEqual((200, {"models": []}), w.get("/api/ps"))
        # A completion loads it again, with the same weights.
        status, again = w.post("/api/generate", {"model": "torch-worker:latest", "prompt": "hi",
                                                 "stream": False, "options": {"num_predict": 5}})
        self.assertEqual(answer["response"], again["response"])

    def test_ollama_errors_are_ollamas(self):
        w = self.ollama("--preload")
        self.assertEqual(1, len(w.get("/api/ps")[1]["models"]), "--preload: loaded at the start")
        self.assertEqual((404, {"error": "model 'llama9' not found"}),
                         w.post("/api/generate", {"model": "llama9", "keep_alive": 0}))
        self.assertEqual(400, w.post("/api/generate", b"{")[0])
        self.assertEqual(404, w.get("/api/tags")[0])

    def test_vllm_metrics_are_vllms_series_and_count_tokens(self):
        w = self.vllm()
        self.vllm_complete(w, "one", 5)
        self.vllm_complete(w, "two", 3)
        m = self.vllm_metrics(w)
        self.assertEqual(("gauge", 0.0), m["vllm:num_requests_running"])
        self.assertEqual(("gauge", 0.0), m["vllm:num_requests_waiting"])
        self.assertEqual("gauge", m["vllm:kv_cache_usage_perc"][0])
        self.assertEqual(("counter", 8.0), m["vllm:generation_tokens_total"])

    def test_vllm_api_key_guards_only_the_v1_routes(self):
        w = self.vllm("--api-key", "sesame")
        self.assertEqual((401, {"error": "Unauthorized"}), self.vllm_complete(w, "x", 1))
        self.assertEqual(200, w.post("/v1/completions", {"prompt": "x", "max_tokens": 1},
                                     headers={"Authorization": "Bearer sesame"})[0])
        self.assertEqual(200, w.get("/health")[0])
        self.assertEqual((200, {"is_sleeping": False}), w.get("/is_sleeping"))

    @staticmethod
    def vllm_metrics(w):
        """{name: (type, value)} of the vllm:* samples (a counter's type is
        under its name without _total, as prometheus_client writes it)."""
        status, text = w.get("/metrics")
        assert status == 200, text
        types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
        return {name: (types.get(name, types.get(name.removesuffix("_total"))), float(value))
                for name, value in re.findall(r"^(vllm:[a-z_]+)\{[^}]*\} (\S+)$", text, re.M)}

    # -- metrics ----------------------------------------------------------------

    def test_metrics_are_llama_servers_series_and_count_tokens(self):
        w = self.llama()
        a = w.complete("one", 5, id_slot=0)
        b = w.complete("one" + a["content"] + "two", 3, id_slot=0)
        m = w.metrics()
        self.assertEqual({
            "llamacpp:prompt_tokens_total": "counter", "llamacpp:prompt_seconds_total": "counter",
            "llamacpp:tokens_predicted_total": "counter",
            "llamacpp:tokens_predicted_seconds_total": "counter", "llamacpp:n_decode_total": "counter",
            "llamacpp:n_tokens_max": "counter", "llamacpp:n_busy_slots_per_decode": "counter",
            "llamacpp:prompt_tokens_seconds": "gauge", "llamacpp:predicted_tokens_seconds": "gauge",
            "llamacpp:requests_processing": "gauge", "llamacpp:requests_deferred": "gauge",
        }, {name: kind for name, (kind, _) in m.items()})
        self.assertEqual(8, m["llamacpp:tokens_predicted_total"][1])
        self.assertEqual(a["timings"]["prompt_n"] + b["timings"]["prompt_n"],
                         m["llamacpp:prompt_tokens_total"][1], "cached tokens are not counted")
        self.assertEqual(0, m["llamacpp:requests_processing"][1])
        self.assertEqual(0, m["llamacpp:requests_deferred"][1])

    # -- stuck ------------------------------------------------------------------

    def in_background(self, w, prompt):
        """A completion that never gets its answer: the worker is killed at
        the end of the case, which ends the request."""
        def request():
            try:
                w.post("/completion", {"prompt": prompt, "n_predict": 4})
            except OSError:
                pass
        threading.Thread(target=request, daemon=True).start()

    def wait_metric(self, w, name, value):
        while w.metrics()[name][1] != value:
            time.sleep(0.05)

    def assert_stuck(self, w):
        tokens = w.metrics()["llamacpp:tokens_predicted_total"][1]
        self.in_background(w, "stuck")
        self.wait_metric(w, "llamacpp:requests_processing", 1)
        self.in_background(w, "waiting")
        self.wait_metric(w, "llamacpp:requests_deferred", 1)
        self.in_background(w, "waiting too")
        self.wait_metric(w, "llamacpp:requests_deferred", 2)
        m = w.metrics()
        self.assertEqual(tokens, m["llamacpp:tokens_predicted_total"][1], "no token since")
        self.assertEqual(1, m["llamacpp:requests_processing"][1])
        self.assertEqual((200, {"status": "ok"}), w.get("/health"))

    def test_stuck_after_n_requests_health_200_tokens_flat_queue_growing(self):
        w = self.start("--metrics", "--stuck-after", "1")
        w.complete("works once", 3)
        self.assert_stuck(w)

    def test_sigusr2_makes_it_stuck(self):
        w = self.start("--metrics")
        w.complete("works", 3)
        w.proc.send_signal(signal.SIGUSR2)
        w.wait_line(r"^stuck: ")
        self.assert_stuck(w)

    # -- infervisor's cooperative checkpoint (VM 146) ---------------------------

    def test_the_cooperative_checkpoint_still_saves_and_resumes_its_chat(self):
        checkpoint = os.path.join(self.dir, "checkpoint")
        os.mkdir(checkpoint)
        w = self.start("--serve-interval-ms", "100", "--tokens-per-request", "2",
                       env={"INFERVISOR_CHECKPOINT_DIR": checkpoint})
        w.wait_line(r"^served request 2 ")
        w.proc.send_signal(signal.SIGUSR1)
        written = w.wait_line(r"^checkpoint written: served \d+,")
        served = int(re.search(r"served (\d+),", written).group(1))
        self.assertTrue(os.path.getsize(os.path.join(checkpoint, "state.pt")) > 0)
        w.stop()
        again = self.start("--serve-interval-ms", "100", "--tokens-per-request", "2",
                           env={"INFERVISOR_RESTORE_FROM": checkpoint})
        again.wait_line(rf"^resumed from {re.escape(checkpoint)} \(served {served} requests, ")
        again.wait_line(rf"^served request {served + 1} ")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_torch_worker.py WORKER [unittest options]")
    WORKER = sys.argv.pop(1)
    if torch_missing():
        sys.exit(f"{sys.executable} cannot import torch: the torch-worker suite tests "
                 "etc/examples/torch-worker.py on Debian's python3-torch "
                 "(apt install python3-torch; ./run-tests installs it)")
    unittest.main(verbosity=2)
