#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""An inference worker on a real framework (Debian's python3-torch) that
speaks infervisor's protocols and llama-server's HTTP API, as an example to
copy from and as the engine the tests run in place of llama.cpp.

It builds a small decoder-only transformer with random weights (no download;
with --model FILE the weights are seeded from the file's bytes), then serves
text completions. Every token's keys and values go into a KV cache, as a real
server's do.

Two ways of serving, side by side:
  - its own chat (infervisor's cooperative checkpoint): every
    --serve-interval-ms it generates tokens that continue one conversation;
    GET /stats answers the counters, POST /generate?tokens=N serves a request
    now. On SIGUSR1 it writes its weights, that conversation's KV cache and
    its counters into $INFERVISOR_CHECKPOINT_DIR (fsynced, then CHECKPOINT=1
    on $NOTIFY_SOCKET); started with $INFERVISOR_RESTORE_FROM it loads them
    back and the conversation goes on where the checkpoint left it.
  - llama-server's API, faithfully for its own KV cache: --parallel slots,
    each with its own context (tokens and KV cache); POST /completion
    continues a slot's context (the prompt's longest common prefix with the
    slot's cache is taken from the cache, the rest is evaluated); GET
    /health, /props, /slots, /metrics (--metrics); POST
    /slots/{id}?action=save|restore|erase with --slot-save-path.

Followed: ggml-org/llama.cpp at commit aa6192d38defc9a5d9fb2987413f71b18f214270
(late 2025): tools/server/server.cpp (server_routes: get_health,
get_metrics, get_slots, post_slots, get_props, handle_completions_impl,
handle_slots_save/restore/erase, ex_wrapper; server_context:
process_single_task's SLOT_SAVE, SLOT_RESTORE, SLOT_ERASE and METRICS,
get_slot_by_id, send_final_response; server_slot::to_json; server_metrics),
the results' to_json (server_task_result_slot_save_load,
server_task_result_slot_erase, server_task_result_cmpl_final::
to_json_non_oaicompat, result_timings), tools/server/server-http.cpp (the
loading and API key middlewares, the 404 handler) and common/common.cpp
(fs_validate_filename). Later trees moved the task loop into
server-context.cpp and added n_prompt_tokens* to a slot's JSON; the answers
here are that commit's. What differs, and why:
  - tokens are bytes: the "tokenizer" maps each byte of the prompt's UTF-8 to
    its own token id after a BOS token; generation is greedy over printable
    ASCII, so a generated text tokenizes back to the same ids and a client
    can continue a conversation by sending it back (cache_prompt).
  - the slot file is our own format (magic, version, tokens, then a header
    naming the model's architecture and shape, then the KV rows), not
    llama_state_seq_save_file's; like llama.cpp's loader, a restore checks the
    version and the shape (layers, width, dtype) and not the weights, so a
    file from another model of the same shape loads: refusing that is the
    supervisor's job (infervisor's sidecar).
  - a failed save answers 200 with "n_written": 0, as that llama-server does
    (llama_state_seq_save_file returns 0 on an error and the task sends it).
  - a completion for a slot id that does not exist answers 400 "Invalid slot
    ID"; that llama-server defers it for ever (get_slot_by_id is null).
  - slot choice for id_slot -1: the idle slot sharing the longest prefix
    with the prompt, else the least recently used (llama-server weighs the
    prefix by --slot-prompt-similarity first).
  - one token per decode: prompts are evaluated a token at a time, and each
    slot decodes on its own (llama-server batches prompts and slots).

With --api vllm it speaks vLLM's OpenAI server instead (for infervisor's
`suspend: {method: vllm-sleep}`), faithfully for what a supervisor uses:
GET /health (an empty 200), GET /metrics (vllm:num_requests_running,
vllm:num_requests_waiting, vllm:kv_cache_usage_perc,
vllm:generation_tokens_total), POST /v1/completions, and, only with
VLLM_SERVER_DEV_MODE=1 in its environment (else FastAPI's 404
{"detail":"Not Found"}), the dev endpoints POST /sleep?level=1|2, POST
/wake_up, GET /is_sleeping {"is_sleeping": BOOL}; a sleep without
--enable-sleep-mode fails in the engine (vLLM asserts; a 500
"Internal Server Error"). --api-key guards only the /v1 routes, as vLLM's
AuthenticationMiddleware does (401 {"error":"Unauthorized"}). It listens
once the model is loaded, as vLLM does. Followed: vllm-project/vllm,
vllm/entrypoints/serve/dev/sleep/api_router.py at commit e7a47b821ef4 and
docs/features/sleep_mode.md. Sleeping, as vLLM's CuMemAllocator does to GPU
memory but on this CPU-only worker: the requests in flight are aborted
(vLLM's default mode "abort"); level 1 copies the weights aside ("to CPU
memory") and frees the live ones, and drops every KV cache (the slots' and
its own chat's); level 2 drops the weights too, and the wake rebuilds them
from their seed (vLLM's level 2 needs the weights reloaded after the wake);
memory freed goes back to the system (malloc_trim). A wake of an awake
engine, or a sleep of a sleeping one, changes nothing. What differs: a
completion to a sleeping engine answers 503 (a real vLLM may crash its
engine, vLLM issue 15483); tokens are bytes, as above.

With --api ollama it speaks Ollama's API instead (for infervisor's preempt
ladder, which unloads an Ollama server's models before anything harder),
faithfully for what a supervisor uses: GET / ("Ollama is running"), GET
/api/version, GET /api/ps (the loaded model with its size in bytes, or
none), and POST /api/generate: with an empty prompt and "keep_alive": 0 it
unloads the model ({"done": true, "done_reason": "unload"}), with an empty
prompt otherwise it loads it ("done_reason": "load"), with a prompt it
loads it if need be and completes (one JSON object with "stream": false,
else one NDJSON line); a model it does not serve is 404 {"error": "model
'x' not found"}, a body that is not JSON 400 {"error": ...}. Like Ollama it
serves with nothing loaded until asked (--preload: loaded at its start), and
a model a request holds is unloaded only when that request ends. Unloaded,
the weights and every KV cache are dropped and the memory given back
(malloc_trim); loaded again, the weights are rebuilt from their seed.
Followed: ollama/ollama at fb30760996871fa9460115c753afd2c60d4ab0f7,
server/routes.go (GenerateHandler's unload branch, PsHandler), server/
sched.go (expireRunner), api/types.go (GenerateResponse,
ProcessModelResponse). The model's name is --alias, else
"torch-worker:latest". What differs: keep_alive other than 0 is not kept
(a loaded model stays until it is unloaded); no chat, embeddings or
streaming of tokens; tokens are bytes, as above.

Test aids (not llama-server's): --load-delay-ms keeps /health at 503 a while;
--stuck-after N and SIGUSR2 make the server stuck: /health stays 200, the
request in flight stops producing tokens (requests_processing stays 1) and
new requests wait (requests_deferred grows).

Run by hand: /usr/bin/python3 torch-worker.py --port 8090 (Ctrl-C ends it).
"""

import argparse
import ctypes
import hashlib
import io
import json
import os
import re
import signal
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import torch

STATE_FILE = "state.pt"
# llama-server's build_info is "b<number>-<commit>"; ours names the worker.
BUILD_INFO = "b1-infervisor-torch-worker"
ARCHITECTURE = "infervisor-torch"
BOS = 1
PRINTABLE = range(0x20, 0x7F)  # the tokens generation may pick: printable ASCII
SLOT_FILE_MAGIC = b"ivsq"
SLOT_FILE_VERSION = 1


# ---- options ------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8090, help="HTTP port; 0: any free one (default 8090)")
    p.add_argument("--dim", type=int, default=256, help="model width (default 256)")
    p.add_argument("--layers", type=int, default=4, help="decoder layers (default 4)")
    p.add_argument("--vocab", type=int, default=4096, help="vocabulary size, at least 256 (default 4096)")
    p.add_argument("--seed", type=int, default=1234, help="seed of the random weights (without --model)")
    p.add_argument("-m", "--model", default="",
                   help="a file whose bytes seed the weights; /props names it as model_path")
    p.add_argument("-a", "--alias", default="", help="the model's name in answers (llama-server's --alias)")
    # Its own chat (the cooperative checkpoint).
    p.add_argument("--tokens-per-request", type=int, default=64,
                   help="tokens each request of its own chat generates (default 64)")
    p.add_argument("--serve-interval-ms", type=int, default=1000,
                   help="a request of its own every N ms; 0: none (default 1000)")
    p.add_argument("--max-context", type=int, default=0,
                   help="tokens its own chat keeps in its KV cache; 0: no limit (default 0)")
    # llama-server's options, same names.
    p.add_argument("-c", "--ctx-size", type=int, default=4096,
                   help="context size, shared by the slots (llama-server's -c; default 4096)")
    p.add_argument("-np", "--parallel", type=int, default=1, help="number of slots (default 1)")
    p.add_argument("-n", "--n-predict", type=int, default=16,
                   help="tokens a completion predicts unless it says (default 16)")
    p.add_argument("--slot-save-path", default="",
                   help="directory slot files are saved to and restored from (default: disabled)")
    p.add_argument("--metrics", action="store_true", help="enable GET /metrics")
    p.add_argument("--no-slots", dest="slots", action="store_false", help="disable GET /slots")
    p.add_argument("--api-key", action="append", default=[], help="require this API key (repeatable)")
    p.add_argument("--mmproj", default="",
                   help="pretend to be multimodal: slot actions answer 501, as llama-server's do")
    # vLLM's API instead (--api vllm) and its option.
    p.add_argument("--api", choices=("llama-server", "vllm", "ollama"), default="llama-server",
                   help="the HTTP API it speaks (default llama-server)")
    p.add_argument("--enable-sleep-mode", action="store_true",
                   help="--api vllm: allow /sleep (with VLLM_SERVER_DEV_MODE=1 for the endpoints)")
    p.add_argument("--preload", action="store_true",
                   help="--api ollama: load the model at the start, not at the first request")
    # Test aids.
    p.add_argument("--load-delay-ms", type=int, default=0, help="stay loading this long after the model is built")
    p.add_argument("--stuck-after", type=int, default=0,
                   help="be stuck once N completions have finished (0: never; SIGUSR2 too)")
    args = p.parse_args(argv)
    if args.vocab < 256:
        p.error("--vocab must be at least 256 (a token per byte)")
    if args.parallel < 1 or args.ctx_size < args.parallel:
        p.error("--parallel must be at least 1 and at most --ctx-size")
    # common/arg.cpp's --slot-save-path: a trailing separator is added, so a
    # file is path + name; the directory is not checked (a save into a
    # missing one answers n_written 0).
    if args.slot_save_path and not args.slot_save_path.endswith("/"):
        args.slot_save_path += "/"
    return args


# ---- the model ----------------------------------------------------------------

class Notifier:
    """sd_notify(3) over $NOTIFY_SOCKET; silent when there is none."""

    def __init__(self):
        path = os.environ.get("NOTIFY_SOCKET", "")
        self.address = "\0" + path[1:] if path.startswith("@") else path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if path else None

    def send(self, message):
        if self.sock:
            self.sock.sendto(message.encode(), self.address)


class Layer(torch.nn.Module):
    """One pre-norm decoder layer with single-head attention over a KV cache."""

    def __init__(self, dim):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(),
                                       torch.nn.Linear(4 * dim, dim))

    def forward(self, x, cache):
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        cache["k"] = torch.cat([cache["k"], k]) if cache["k"] is not None else k
        cache["v"] = torch.cat([cache["v"], v]) if cache["v"] is not None else v
        weights = torch.softmax(q @ cache["k"].T / cache["k"].shape[-1] ** 0.5, dim=-1)
        x = x + self.out(weights @ cache["v"])
        return x + self.mlp(self.norm2(x))


class Model(torch.nn.Module):
    def __init__(self, vocab, dim, layers):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(Layer(dim) for _ in range(layers))
        self.head = torch.nn.Linear(dim, vocab)

    def logits(self, token, caches):
        """Decodes one token: appends its keys and values to `caches`."""
        x = self.embed(torch.tensor([token]))
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cache)
        return self.head(x)[-1]

    def step(self, token, caches):
        return int(self.logits(token, caches).argmax())


def weights_seed(args):
    """The seed of the weights: --seed, or the first 8 bytes of the sha256 of
    --model's content (another file, other weights of the same shape)."""
    if not args.model:
        return args.seed
    digest = hashlib.sha256()
    with open(args.model, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return int.from_bytes(digest.digest()[:8], "little") & ((1 << 63) - 1)


def build_model(args):
    torch.manual_seed(weights_seed(args))
    return Model(args.vocab, args.dim, args.layers).eval()


def empty_cache(layers):
    return [{"k": None, "v": None} for _ in range(layers)]


def cache_bytes(caches):
    return sum(t.numel() * t.element_size() for c in caches for t in c.values() if t is not None)


# ---- its own chat (infervisor's cooperative checkpoint) -----------------------

class Chat:
    """Its own conversation over the shared model: its KV cache and counters."""

    def __init__(self, args, model):
        self.args = args
        self.lock = threading.Lock()
        self.served = 0
        self.tokens = 0
        self.last_token = 1
        self.restored_from = None
        self.model = model
        self.caches = empty_cache(args.layers)
        self.asleep = False  # --api vllm: the model's weights are gone meanwhile

    def context(self):
        k = self.caches[0]["k"]
        return 0 if k is None else k.shape[0]

    def cache_bytes(self):
        return cache_bytes(self.caches)

    def generate(self, n):
        """Serves a request of n tokens; None (nothing served) while asleep."""
        with self.lock, torch.no_grad():
            if self.asleep:
                return None
            for _ in range(n):
                self.last_token = self.model.step(self.last_token, self.caches)
            self.tokens += n
            self.served += 1
            if self.args.max_context:
                for c in self.caches:
                    c["k"] = c["k"][-self.args.max_context:]
                    c["v"] = c["v"][-self.args.max_context:]
            return self.served

    def save(self, directory):
        """Writes state.pt into `directory` and fsyncs it; returns its size."""
        with self.lock:
            state = {"model": self.model.state_dict(), "caches": self.caches,
                     "served": self.served, "tokens": self.tokens,
                     "last_token": self.last_token, "args": vars(self.args)}
            path = os.path.join(directory, STATE_FILE)
            with open(path, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
        fsync_dir(directory)
        return os.path.getsize(path)

    def restore(self, directory):
        state = torch.load(os.path.join(directory, STATE_FILE))
        self.model.load_state_dict(state["model"])
        self.caches = state["caches"]
        self.served, self.tokens = state["served"], state["tokens"]
        self.last_token = state["last_token"]
        self.restored_from = directory


def fsync_dir(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---- llama-server's errors ----------------------------------------------------

# format_error_response (tools/server/server-common.cpp): type -> (code, name).
ERROR_TYPES = {
    "invalid_request": (400, "invalid_request_error"),
    "authentication": (401, "authentication_error"),
    "server": (500, "server_error"),
    "not_found": (404, "not_found_error"),
    "permission": (403, "permission_error"),
    "unavailable": (503, "unavailable_error"),
    "not_supported": (501, "not_supported_error"),
    "exceed_context_size": (400, "exceed_context_size_error"),
}


class ServerError(Exception):
    """An answer {"error": {"code", "message", "type", ...}} with status code."""

    def __init__(self, message, kind, **extra):
        super().__init__(message)
        self.code, self.type = ERROR_TYPES[kind]
        self.extra = extra

    def body(self):
        return {"error": {"code": self.code, "message": str(self), "type": self.type, **self.extra}}


def json_body(raw):
    """json::parse(req.body): a parse error is an exception, which ex_wrapper
    answers 500 server_error with the exception's text."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ServerError(f"[json.exception.parse_error.101] parse error: {e}", "server") from None


def string_field(data, key):
    """request_data.at(key) as a std::string: missing or not a string is a
    json exception, answered 500 by ex_wrapper."""
    if not isinstance(data, dict) or key not in data:
        raise ServerError(f"[json.exception.out_of_range.403] key '{key}' not found", "server")
    if not isinstance(data[key], str):
        raise ServerError(f"[json.exception.type_error.302] type must be string, but is "
                          f"{json_type_name(data[key])}", "server")
    return data[key]


def json_type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {list: "array", dict: "object"}.get(type(value), "string")


def stoi(text):
    """std::stoi: leading whitespace, an optional sign, digits (the rest is
    ignored); no digits or out of int's range throws (-> "Invalid slot ID")."""
    m = re.match(r"\s*([+-]?\d+)", text)
    if not m:
        return None
    value = int(m.group(1))
    return value if -2**31 <= value < 2**31 else None


def fs_validate_filename(filename):
    """common/common.cpp fs_validate_filename(filename, allow_subdirs=false)."""
    raw = filename.encode("utf-8", "surrogatepass")
    if not raw or len(raw) > 255:
        return False
    try:
        raw.decode("utf-8")  # strict: overlong forms, surrogates, bad bytes fail
    except UnicodeDecodeError:
        return False
    for ch in filename:
        c = ord(ch)
        if (c <= 0x1F or c == 0x7F or 0x80 <= c <= 0x9F or c in (0xFF0E, 0x2215, 0x2216)
                or 0xD800 <= c <= 0xDFFF or c in (0xFFFD, 0xFEFF) or ch in ':*?"<>|/\\'):
            return False
    if filename[0] == " " or filename[-1] in " .":
        return False
    return ".." not in filename and filename != "."


# ---- tokens -------------------------------------------------------------------

def tokenize(prompt, vocab):
    """tokenize_input_prompts for one prompt: a string is BOS then one token
    per UTF-8 byte; a list of token ids is taken as it is."""
    if isinstance(prompt, str):
        return [BOS] + list(prompt.encode("utf-8"))
    if isinstance(prompt, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        if any(t < 0 or t >= vocab for t in prompt):
            raise ServerError("invalid token in the prompt", "invalid_request")
        return list(prompt)
    raise ServerError('"prompt" must be a string or a list of tokens', "invalid_request")


def detokenize(tokens):
    return bytes(t for t in tokens if 0 <= t < 256 and t != BOS).decode("utf-8", "replace")


def common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


# ---- slot files ---------------------------------------------------------------

class SlotFileError(Exception):
    pass


def model_shape(args):
    """What a slot file must match to be restored: llama.cpp's loader checks
    the layer count and each layer's key/value type and row size."""
    return {"arch": ARCHITECTURE, "n_layer": args.layers, "n_embd": args.dim, "dtype": "float32"}


def write_slot_file(path, tokens, caches, shape):
    """Writes a slot: magic, version, token count, tokens, the model's shape
    (JSON), the KV rows (torch.save of plain tensors); returns its size."""
    header = json.dumps(shape).encode()
    rows = io.BytesIO()
    torch.save({"k": [c["k"] for c in caches], "v": [c["v"] for c in caches]}, rows)
    with open(path, "wb") as f:
        f.write(SLOT_FILE_MAGIC + struct.pack("<II", SLOT_FILE_VERSION, len(tokens)))
        f.write(struct.pack(f"<{len(tokens)}i", *tokens))
        f.write(struct.pack("<I", len(header)) + header)
        f.write(rows.getbuffer())
        f.flush()
        os.fsync(f.fileno())
        return f.tell()


def read_slot_file(path, shape, capacity):
    """Reads a slot file back; raises SlotFileError when it is not one, is of
    another version, holds more tokens than the slot's context or was written
    by a model of another shape (llama_state_seq_load_file's checks)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 12 or data[:4] != SLOT_FILE_MAGIC:
        raise SlotFileError("not a slot file")
    version, n_tokens = struct.unpack_from("<II", data, 4)
    if version != SLOT_FILE_VERSION:
        raise SlotFileError(f"unknown slot file version {version}")
    if n_tokens > capacity:
        raise SlotFileError(f"token count {n_tokens} exceeds the context ({capacity})")
    offset = 12 + 4 * n_tokens
    tokens = list(struct.unpack_from(f"<{n_tokens}i", data, 12))
    (header_len,) = struct.unpack_from("<I", data, offset)
    written_shape = json.loads(data[offset + 4:offset + 4 + header_len])
    if written_shape != shape:
        raise SlotFileError(f"model mismatch: file {written_shape}, server {shape}")
    rows = torch.load(io.BytesIO(data[offset + 4 + header_len:]), weights_only=True)
    caches = [{"k": k, "v": v} for k, v in zip(rows["k"], rows["v"])]
    if len(caches) != shape["n_layer"] or not all(rows_fit(t, n_tokens, shape) for c in caches
                                                  for t in c.values()):
        raise SlotFileError("the KV rows do not match the header")
    return tokens, caches


def rows_fit(t, n_tokens, shape):
    """A layer's keys or values: none for an empty slot, else one float32
    row of the model's width per token."""
    if n_tokens == 0:
        return t is None
    return (isinstance(t, torch.Tensor) and t.dtype == torch.float32
            and tuple(t.shape) == (n_tokens, shape["n_embd"]))


# ---- slots and the engine -----------------------------------------------------

class Slot:
    """One of llama-server's slots: its context (tokens and KV cache) and
    what its last task did (server_slot)."""

    def __init__(self, slot_id, n_ctx, layers):
        self.id = slot_id
        self.n_ctx = n_ctx
        self.layers = layers
        self.tokens = []
        self.caches = empty_cache(layers)
        self.is_processing = False  # a completion runs in it
        self.in_action = False  # a save, restore or erase has it (not "processing")
        self.t_last_used = -1
        self.task = None  # the last task's figures, for GET /slots

    def free(self):
        return not self.is_processing and not self.in_action

    def keep(self, n):
        """Drops the context after its first n tokens."""
        self.tokens = self.tokens[:n]
        if n == 0:
            self.caches = empty_cache(self.layers)
        else:
            for c in self.caches:
                c["k"], c["v"] = c["k"][:n], c["v"][:n]

    def to_json(self):
        """server_slot::to_json(only_metrics = true): nothing says how many
        tokens the slot holds (later trees add n_prompt_tokens), so a
        supervisor saves every slot and keeps those with n_saved > 0."""
        res = {"id": self.id, "n_ctx": self.n_ctx, "speculative": False,
               "is_processing": self.is_processing}
        if self.task:
            t = self.task
            res.update({"id_task": t["id"],
                        "params": {"n_predict": t["n_predict"], "temperature": 0.0,
                                   "cache_prompt": t["cache_prompt"]},
                        "next_token": [{"has_next_token": t["has_next_token"], "has_new_line": False,
                                        "n_remain": t["n_remain"], "n_decoded": t["n_decoded"]}]})
        return res


class Metrics:
    """server_metrics: totals since the start, and a bucket reset at each
    GET /metrics (the throughput gauges). Times are whole milliseconds, as
    its uint64_t fields keep them. Note when the counters move, as there:
    the prompt's tokens once it is evaluated (on_prompt_eval), the predicted
    tokens once the request ends (on_prediction, from send_final_response's
    caller), so tokens_predicted_total is flat during a long generation."""

    def __init__(self):
        self.t_start = int(time.time())
        self.n_prompt_tokens_processed_total = 0
        self.t_prompt_processing_total = 0
        self.n_tokens_predicted_total = 0
        self.t_tokens_generation_total = 0
        self.n_decode_total = 0
        self.n_busy_slots_total = 0
        self.n_tokens_max = 0
        self.reset_bucket()

    def reset_bucket(self):
        self.n_prompt_tokens_processed = 0
        self.t_prompt_processing = 0
        self.n_tokens_predicted = 0
        self.t_tokens_generation = 0

    def on_prompt_eval(self, n_processed, ms, n_slot_tokens):
        self.n_prompt_tokens_processed_total += n_processed
        self.n_prompt_tokens_processed += n_processed
        self.t_prompt_processing += int(ms)
        self.t_prompt_processing_total += int(ms)
        self.n_tokens_max = max(self.n_tokens_max, n_slot_tokens)

    def on_prediction(self, n_decoded, ms):
        self.n_tokens_predicted_total += n_decoded
        self.n_tokens_predicted += n_decoded
        self.t_tokens_generation += int(ms)
        self.t_tokens_generation_total += int(ms)

    def on_decoded(self, slots):
        """One llama_decode: the busy slots, the longest slot context."""
        self.n_decode_total += 1
        for slot in slots:
            self.n_busy_slots_total += slot.is_processing
            self.n_tokens_max = max(self.n_tokens_max, len(slot.tokens))


def prometheus_text(m, processing, deferred):
    """get_metrics in tools/server/server.cpp: the llamacpp:* series, their
    HELP and TYPE, values as a C++ stream prints a double (%g)."""
    def rate(n, ms):
        return 1e3 / ms * n if n and ms else 0.0
    series = [
        ("counter", "prompt_tokens_total", "Number of prompt tokens processed.",
         m.n_prompt_tokens_processed_total),
        ("counter", "prompt_seconds_total", "Prompt process time", m.t_prompt_processing_total / 1e3),
        ("counter", "tokens_predicted_total", "Number of generation tokens processed.",
         m.n_tokens_predicted_total),
        ("counter", "tokens_predicted_seconds_total", "Predict process time",
         m.t_tokens_generation_total / 1e3),
        ("counter", "n_decode_total", "Total number of llama_decode() calls", m.n_decode_total),
        ("counter", "n_tokens_max", "Largest observed n_tokens.", m.n_tokens_max),
        ("counter", "n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call",
         m.n_busy_slots_total / max(m.n_decode_total, 1)),
        ("gauge", "prompt_tokens_seconds", "Average prompt throughput in tokens/s.",
         rate(m.n_prompt_tokens_processed, m.t_prompt_processing)),
        ("gauge", "predicted_tokens_seconds", "Average generation throughput in tokens/s.",
         rate(m.n_tokens_predicted, m.t_tokens_generation)),
        ("gauge", "requests_processing", "Number of requests processing.", processing),
        ("gauge", "requests_deferred", "Number of requests deferred.", deferred),
    ]
    return "".join(f"# HELP llamacpp:{name} {help_}\n# TYPE llamacpp:{name} {kind}\n"
                   f"llamacpp:{name} {float(value):g}\n" for kind, name, help_, value in series)


def elapsed_ms(t0):
    return (time.perf_counter() - t0) * 1e3


class Engine:
    """llama-server's slots over the shared model: completions, slot actions,
    metrics. `cond` guards the slots' states and the counters; a completion
    takes a slot (or waits, deferred), computes without the lock, gives it
    back. Stuck, the next decode never returns and new work waits."""

    def __init__(self, args, model):
        self.args = args
        self.model = model
        n_ctx = args.ctx_size // args.parallel
        self.slots = [Slot(i, n_ctx, args.layers) for i in range(args.parallel)]
        self.cond = threading.Condition()
        self.metrics = Metrics()
        self.deferred = 0
        self.next_task_id = 0
        self.completions_done = 0
        self.stuck = False
        self.sleep_level = 0  # --api vllm: 1 or 2 while asleep
        self.weights_aside = None  # level 1: the weights, copied aside

    # -- state --
    def processing(self):
        return sum(s.is_processing for s in self.slots)

    def become_stuck(self):
        with self.cond:
            self.stuck = True
            self.cond.notify_all()

    def metrics_text(self):
        with self.cond:
            text = prometheus_text(self.metrics, self.processing(), self.deferred)
            self.metrics.reset_bucket()
            return text

    def slots_json(self):
        with self.cond:
            return [s.to_json() for s in self.slots]

    def slot(self, slot_id):
        """get_slot_by_id: None when there is no such slot."""
        return next((s for s in self.slots if s.id == slot_id), None)

    # -- taking a slot --
    def _pick_idle(self, tokens):
        """get_available_slot: the idle slot whose context shares the longest
        prefix with the prompt, else the least recently used idle one."""
        idle = [s for s in self.slots if s.free()]
        if not idle:
            return None
        best = max(idle, key=lambda s: common_prefix(s.tokens, tokens))
        if common_prefix(best.tokens, tokens) > 0:
            return best
        return min(idle, key=lambda s: s.t_last_used)

    def _wait_for(self, ready):
        """Waits (counted as deferred, as queue_tasks.defer does) until
        ready() is true and the engine can start work. Holds self.cond."""
        counted = False
        while True:
            result = None if self.stuck and self.processing() > 0 else ready()
            if result is not None:
                if counted:
                    self.deferred -= 1
                return result
            if not counted:
                self.deferred += 1
                counted = True
            self.cond.wait()

    def acquire(self, id_slot, tokens):
        """The slot a completion runs in, marked processing; waits while none
        is free (id_slot -1: any)."""
        with self.cond:
            if id_slot != -1 and self.slot(id_slot) is None:
                raise ServerError("Invalid slot ID", "invalid_request")

            def ready():
                if id_slot == -1:
                    return self._pick_idle(tokens)
                s = self.slot(id_slot)
                return s if s.free() else None
            slot = self._wait_for(ready)
            slot.is_processing = True
            self.next_task_id += 1
            return slot, self.next_task_id

    def release(self, slot):
        with self.cond:
            slot.is_processing = False
            slot.t_last_used = time.monotonic_ns()
            self.completions_done += 1
            if self.args.stuck_after and self.completions_done >= self.args.stuck_after:
                self.stuck = True
            self.cond.notify_all()

    def idle_slot(self, slot_id):
        """A slot action's slot once idle (deferred until then), held for
        the action. llama-server runs the action in its task loop, so it is
        not counted as processing. Raises "Invalid slot ID"."""
        with self.cond:
            slot = self.slot(slot_id)
            if slot is None:
                raise ServerError("Invalid slot ID", "invalid_request")
            self._wait_for(lambda: slot if slot.free() else None)
            slot.in_action = True
            return slot

    def give_back(self, slot):
        with self.cond:
            slot.in_action = False
            self.cond.notify_all()

    # -- decoding --
    def decode(self, slot, token):
        """One llama_decode of one token in `slot`; never returns when stuck."""
        with self.cond:
            while self.stuck:
                self.cond.wait()
            if self.sleep_level:  # vLLM's sleep mode "abort"
                raise ServerError("the request was aborted: the engine went to sleep", "unavailable")
        with torch.no_grad():
            logits = self.model.logits(token, slot.caches)
        slot.tokens.append(token)
        with self.cond:
            self.metrics.on_decoded(self.slots)
        return logits

    # -- POST /completion --
    def complete(self, body):
        """handle_completions_impl + the slot's task, non-streaming."""
        if not isinstance(body, dict) or "prompt" not in body:
            raise ServerError("[json.exception.out_of_range.403] key 'prompt' not found", "invalid_request")
        tokens = tokenize(body["prompt"], self.args.vocab)
        if not tokens:
            raise ServerError("empty prompt", "invalid_request")
        try:  # params_from_json_cmpl: a bad value is an invalid request
            n_predict = int(body.get("n_predict", self.args.n_predict))
            id_slot = int(body.get("id_slot", -1))
            cache_prompt = bool(body.get("cache_prompt", True))
        except (TypeError, ValueError) as e:
            raise ServerError(str(e), "invalid_request") from None
        slot, task_id = self.acquire(id_slot, tokens)
        try:
            return self._run(slot, task_id, tokens, n_predict, cache_prompt, body)
        finally:
            self.release(slot)

    def _run(self, slot, task_id, tokens, n_predict, cache_prompt, body):
        if len(tokens) >= slot.n_ctx:
            raise ServerError(f"request ({len(tokens)} tokens) exceeds the available context size "
                              f"({slot.n_ctx} tokens), try increasing it", "exceed_context_size",
                              n_prompt_tokens=len(tokens), n_ctx=slot.n_ctx)
        # update_slots: reuse the cached prefix; at least one prompt token is
        # evaluated, for its logits.
        n_past = common_prefix(slot.tokens, tokens) if cache_prompt else 0
        n_past = min(n_past, len(tokens) - 1)
        slot.keep(n_past)
        task = {"id": task_id, "prompt_n": 0, "cache_n": n_past, "n_predict": n_predict,
                "cache_prompt": cache_prompt, "has_next_token": True,
                "n_remain": n_predict, "n_decoded": 0}
        slot.task = task
        t0 = time.perf_counter()
        for token in tokens[n_past:]:
            logits = self.decode(slot, token)
            task["prompt_n"] += 1
        prompt_ms = elapsed_ms(t0)
        with self.cond:
            self.metrics.on_prompt_eval(task["prompt_n"], prompt_ms, len(slot.tokens))
        generated, stop_type, predicted_ms = self._generate(slot, task, logits, n_predict)
        return self._answer(slot, task, body, tokens, generated, stop_type, prompt_ms, predicted_ms)

    def _generate(self, slot, task, logits, n_predict):
        """Greedy over printable tokens; each sampled token but the last is
        decoded into the slot (llama-server decodes a sampled token on the
        next iteration, so the last one is never in the cache)."""
        generated = []
        t0 = time.perf_counter()
        stop_type = "limit"
        while n_predict < 0 or len(generated) < n_predict:
            token = PRINTABLE.start + int(logits[PRINTABLE.start:PRINTABLE.stop].argmax())
            generated.append(token)
            task["n_decoded"] = len(generated)
            task["n_remain"] = n_predict - len(generated) if n_predict >= 0 else -1
            if len(generated) == n_predict or len(slot.tokens) + 1 >= slot.n_ctx:
                break
            logits = self.decode(slot, token)
        task["has_next_token"] = False
        predicted_ms = elapsed_ms(t0)
        with self.cond:
            self.metrics.on_prediction(len(generated), predicted_ms)
        return generated, stop_type, predicted_ms

    def _answer(self, slot, task, body, tokens, generated, stop_type, prompt_ms, predicted_ms):
        """server_task_result_cmpl_final::to_json_non_oaicompat."""
        def per(ms, n):
            return (ms / n if n else 0.0), (1e3 * n / ms if ms else 0.0)
        prompt_per_token_ms, prompt_per_second = per(prompt_ms, task["prompt_n"])
        predicted_per_token_ms, predicted_per_second = per(predicted_ms, len(generated))
        return {
            "index": 0,
            "content": detokenize(generated),
            "tokens": generated if body.get("return_tokens") else [],
            "id_slot": slot.id,
            "stop": True,
            "model": self.args.alias or os.path.basename(self.args.model),
            "tokens_predicted": len(generated),
            "tokens_evaluated": len(tokens),
            "generation_settings": {"n_predict": task["n_predict"], "temperature": 0.0,
                                    "cache_prompt": task["cache_prompt"]},
            "prompt": detokenize(tokens),
            "has_new_line": False,
            "truncated": False,
            "stop_type": stop_type,
            "stopping_word": "",
            "tokens_cached": len(slot.tokens),
            "timings": {
                "cache_n": task["cache_n"],
                "prompt_n": task["prompt_n"],
                "prompt_ms": prompt_ms,
                "prompt_per_token_ms": prompt_per_token_ms,
                "prompt_per_second": prompt_per_second,
                "predicted_n": len(generated),
                "predicted_ms": predicted_ms,
                "predicted_per_token_ms": predicted_per_token_ms,
                "predicted_per_second": predicted_per_second,
            },
        }

    # -- POST /slots/{id}?action=... --
    def save_slot(self, slot_id, filename, filepath):
        """SERVER_TASK_TYPE_SLOT_SAVE: writes the slot's context into
        filepath; a failed write answers n_written 0, as llama-server does."""
        slot = self.idle_slot(slot_id)
        try:
            t0 = time.perf_counter()
            try:
                n_written = write_slot_file(filepath, slot.tokens, slot.caches, model_shape(self.args))
            except OSError as e:
                print(f"slot save: {filepath}: {e}", file=sys.stderr, flush=True)
                n_written = 0
            return {"id_slot": slot_id, "filename": filename, "n_saved": len(slot.tokens),
                    "n_written": n_written, "timings": {"save_ms": elapsed_ms(t0)}}
        finally:
            self.give_back(slot)

    def restore_slot(self, slot_id, filename, filepath):
        """SERVER_TASK_TYPE_SLOT_RESTORE: loads the slot's context from
        filepath; any failure clears the slot and answers 400."""
        slot = self.idle_slot(slot_id)
        try:
            t0 = time.perf_counter()
            try:
                tokens, caches = read_slot_file(filepath, model_shape(self.args), slot.n_ctx)
                n_read = os.path.getsize(filepath)
            except (OSError, SlotFileError, ValueError, RuntimeError, struct.error) as e:
                print(f"slot restore: {filepath}: {e}", file=sys.stderr, flush=True)
                slot.keep(0)
                raise ServerError("Unable to restore slot, no available space in KV cache or "
                                  "invalid slot save file", "invalid_request") from None
            slot.tokens, slot.caches = tokens, caches
            return {"id_slot": slot_id, "filename": filename, "n_restored": len(tokens),
                    "n_read": n_read, "timings": {"restore_ms": elapsed_ms(t0)}}
        finally:
            self.give_back(slot)

    def erase_slot(self, slot_id):
        """SERVER_TASK_TYPE_SLOT_ERASE: drops the slot's context."""
        slot = self.idle_slot(slot_id)
        try:
            n_erased = len(slot.tokens)
            slot.keep(0)
            return {"id_slot": slot_id, "n_erased": n_erased}
        finally:
            self.give_back(slot)


# ---- HTTP ---------------------------------------------------------------------

class Server:
    """What the HTTP handlers see: the options, and the engine and chat once
    loaded (None while loading)."""

    def __init__(self, args):
        self.args = args
        self.engine = None
        self.chat = None


def loading_error():
    """server-http.cpp's middleware_server_state while the model loads: the
    same body for every path (but /models), keys in this order."""
    return 503, {"error": {"message": "Loading model", "type": "unavailable_error", "code": 503}}


def api_key_error(server, path, headers):
    """server-http.cpp's middleware_validate_api_key: /health and /models
    are public; "Authorization: Bearer KEY" or "X-Api-Key: KEY"."""
    keys = server.args.api_key
    if not keys or path in ("/", "/health", "/v1/health", "/models", "/v1/models", "/api/tags"):
        return None
    given = headers.get("Authorization", "") or headers.get("X-Api-Key", "")
    if given.startswith("Bearer "):
        given = given[len("Bearer "):]
    if given in keys:
        return None
    return 401, {"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}}


def props(server):
    """get_props: what infervisor's sidecar records comes from here."""
    args, engine = server.args, server.engine
    return {
        "default_generation_settings": {"params": {"n_predict": args.n_predict, "temperature": 0.0},
                                        "n_ctx": engine.slots[0].n_ctx},
        "total_slots": args.parallel,
        "model_alias": args.alias,
        "model_path": args.model,
        "modalities": {"vision": bool(args.mmproj), "audio": False},
        "endpoint_slots": args.slots,
        "endpoint_props": False,
        "endpoint_metrics": args.metrics,
        "webui": False,
        "chat_template": "",
        "bos_token": "",
        "eos_token": "",
        "build_info": BUILD_INFO,
    }


def get_routes(server, path):
    """GET: (status, JSON body or text) for a ready server."""
    engine, args = server.engine, server.args
    if path in ("/health", "/v1/health"):
        return 200, {"status": "ok"}
    if path == "/props":
        return 200, props(server)
    if path == "/slots":
        if not args.slots:
            raise ServerError("This server does not support slots endpoint. Start it with `--slots`",
                              "not_supported")
        return 200, engine.slots_json()
    if path == "/metrics":
        if not args.metrics:
            raise ServerError("This server does not support metrics endpoint. Start it with `--metrics`",
                              "not_supported")
        return 200, engine.metrics_text()
    if path == "/stats":
        chat = server.chat
        return 200, {"served": chat.served, "tokens": chat.tokens, "context": chat.context(),
                     "kv_cache_bytes": chat.cache_bytes(), "restored_from": chat.restored_from}
    return None


def post_slots(server, slot_id_text, query, raw):
    """post_slots in tools/server/server.cpp, checks in its order."""
    args, engine = server.args, server.engine
    if not args.slot_save_path:
        raise ServerError("This server does not support slots action. Start it with `--slot-save-path`",
                          "not_supported")
    slot_id = stoi(slot_id_text)
    if slot_id is None:
        raise ServerError("Invalid slot ID", "invalid_request")
    action = query.get("action", [""])[0]
    if action not in ("save", "restore", "erase"):
        raise ServerError("Invalid action", "invalid_request")
    if action == "erase":
        check_not_multimodal(args)
        return engine.erase_slot(slot_id)
    filename = string_field(json_body(raw), "filename")
    if not fs_validate_filename(filename):
        raise ServerError("Invalid filename", "invalid_request")
    check_not_multimodal(args)
    filepath = args.slot_save_path + filename
    if action == "save":
        return engine.save_slot(slot_id, filename, filepath)
    return engine.restore_slot(slot_id, filename, filepath)


def check_not_multimodal(args):
    """check_no_mtmd in process_single_task: slot actions on a multimodal server."""
    if args.mmproj:
        raise ServerError("This feature is not supported by multimodal", "not_supported")


def post_routes(server, url, raw):
    path = url.path
    if path in ("/completion", "/completions"):
        return 200, server.engine.complete(json_body(raw))
    m = re.fullmatch(r"/slots/([^/]*)", path)
    if m:
        return 200, post_slots(server, m.group(1), parse_qs(url.query), raw)
    if path == "/generate":
        chat = server.chat
        try:
            n = int(parse_qs(url.query).get("tokens", [chat.args.tokens_per_request])[0])
        except ValueError:
            return 400, {"error": "tokens must be a whole number"}
        served = chat.generate(max(1, min(n, 4096)))
        if served is None:
            raise ServerError("the engine is sleeping", "unavailable")
        return 200, {"served": served, "context": chat.context()}
    return None


# ---- vLLM's API (--api vllm) --------------------------------------------------

def malloc_trim():
    """Gives freed heap memory back to the system, so that a sleep shows in
    the worker's RSS and its cgroup's memory.current."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def dev_mode():
    """vllm/envs.py: bool(int(os.getenv("VLLM_SERVER_DEV_MODE", "0")))."""
    try:
        return bool(int(os.environ.get("VLLM_SERVER_DEV_MODE", "0")))
    except ValueError:
        return False


def model_name(server):
    """--served-model-name defaults to the model's path in vLLM."""
    return server.args.alias or server.args.model or "torch-worker"


def vllm_sleep(server, level):
    """EngineCore.sleep with mode "abort": the requests in flight end (their
    next decode raises), then the KV caches and the weights are let go."""
    engine, chat = server.engine, server.chat
    with engine.cond:
        if engine.sleep_level:
            return  # the executor: "already sleeping", nothing done
        engine.sleep_level = level
        engine.cond.notify_all()
        while engine.processing():
            engine.cond.wait()
    with chat.lock:
        chat.asleep = True
        kv = sum(cache_bytes(s.caches) for s in engine.slots) + chat.cache_bytes()
        for slot in engine.slots:
            slot.keep(0)
        chat.caches = empty_cache(server.args.layers)
        params = list(engine.model.parameters())
        weights = sum(p.numel() * p.element_size() for p in params)
        engine.weights_aside = [p.detach().clone() for p in params] if level == 1 else None
        for p in params:
            p.data = torch.empty(0)
    malloc_trim()
    what = "copied aside" if level == 1 else "dropped"
    print(f"sleeping (level {level}): KV cache of {kv >> 10} KiB dropped, weights of "
          f"{weights >> 10} KiB {what}", flush=True)


def vllm_wake_up(server):
    """EngineCore.wake_up: weights back (level 1: from the copy; level 2:
    rebuilt from their seed), an empty KV cache. Any tags wake everything."""
    engine, chat = server.engine, server.chat
    with chat.lock:
        with engine.cond:
            level = engine.sleep_level
        if not level:
            return  # the executor: "not sleeping", nothing done
        source = engine.weights_aside or [p.detach() for p in build_model(server.args).parameters()]
        for p, w in zip(engine.model.parameters(), source):
            p.data = w
        engine.weights_aside = None
        chat.asleep = False
        with engine.cond:
            engine.sleep_level = 0
            engine.cond.notify_all()
    print(f"woken up (from level {level})", flush=True)


def vllm_metrics_text(server):
    """vllm/v1/metrics/loggers.py's PrometheusStatLogger series a supervisor
    reads, as prometheus_client writes them (labels sorted, values as
    Python floats; a counter's samples are NAME_total and NAME_created)."""
    engine, args = server.engine, server.args
    labels = '{engine="0",model_name="%s"}' % model_name(server).replace("\\", "\\\\").replace('"', '\\"')
    with engine.cond:
        running, waiting = engine.processing(), engine.deferred
        used = sum(len(s.tokens) for s in engine.slots)
        generated = engine.metrics.n_tokens_predicted_total
    gauges = [("num_requests_running", "Number of requests in model execution batches.", running),
              ("num_requests_waiting", "Number of requests waiting to be processed.", waiting),
              ("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
               used / args.ctx_size)]
    text = "".join(f"# HELP vllm:{name} {help_}\n# TYPE vllm:{name} gauge\n"
                   f"vllm:{name}{labels} {float(value)!r}\n" for name, help_, value in gauges)
    return text + ("# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
                   "# TYPE vllm:generation_tokens counter\n"
                   f"vllm:generation_tokens_total{labels} {float(generated)!r}\n"
                   f"vllm:generation_tokens_created{labels} {float(engine.metrics.t_start)!r}\n")


def vllm_error(status, message, kind):
    """vLLM's ErrorResponse."""
    return status, {"error": {"message": message, "type": kind, "param": None, "code": status}}


def vllm_completions(server, raw):
    """POST /v1/completions, non-streaming, one prompt (a string)."""
    engine = server.engine
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return vllm_error(400, f"invalid JSON: {e}", "BadRequestError")
    prompt = body.get("prompt") if isinstance(body, dict) else None
    if not isinstance(prompt, str) or not prompt:
        return vllm_error(400, "prompt must be a non-empty string", "BadRequestError")
    max_tokens = body.get("max_tokens", 16)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return vllm_error(400, "max_tokens must be at least 1", "BadRequestError")
    with engine.cond:
        asleep = engine.sleep_level
    if asleep:
        return vllm_error(503, "the engine is sleeping", "ServiceUnavailableError")
    try:
        answer = engine.complete({"prompt": prompt, "n_predict": max_tokens, "cache_prompt": True})
    except ServerError as e:
        return vllm_error(e.code, str(e), "BadRequestError" if e.code == 400 else "InternalServerError")
    n_prompt, n_completion = answer["tokens_evaluated"], answer["tokens_predicted"]
    return 200, {
        "id": f"cmpl-{os.urandom(16).hex()}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model_name(server),
        "choices": [{"index": 0, "text": answer["content"], "logprobs": None,
                     "finish_reason": "length" if answer["stop_type"] == "limit" else "stop",
                     "stop_reason": None}],
        "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_completion,
                  "total_tokens": n_prompt + n_completion},
    }


def vllm_dev_route(server, method, url):
    """vllm/entrypoints/serve/dev/sleep/api_router.py (with dev mode)."""
    args, engine = server.args, server.engine
    allowed = {"/sleep": "POST", "/wake_up": "POST", "/is_sleeping": "GET"}[url.path]
    if method != allowed:
        return 405, {"detail": "Method Not Allowed"}
    if url.path == "/is_sleeping":
        with engine.cond:
            return 200, {"is_sleeping": bool(engine.sleep_level)}
    if not args.enable_sleep_mode:
        # EngineCore asserts enable_sleep_mode: an unhandled exception.
        return 500, "Internal Server Error"
    if url.path == "/sleep":
        level = parse_qs(url.query).get("level", ["1"])[0]
        if not re.fullmatch(r"-?\d+", level):
            return 500, "Internal Server Error"  # int(level) raises
        vllm_sleep(server, int(level))
    else:
        vllm_wake_up(server)
    return 200, b""


def vllm_route(server, method, url, raw):
    """(status, body) of a vLLM server: JSON, text, or b"" (no body)."""
    if url.path in ("/sleep", "/wake_up", "/is_sleeping") and dev_mode():
        return vllm_dev_route(server, method, url)
    routes = {("GET", "/health"): lambda: (200, b""),
              ("GET", "/metrics"): lambda: (200, vllm_metrics_text(server)),
              ("POST", "/v1/completions"): lambda: vllm_completions(server, raw)}
    route = routes.get((method, url.path))
    return route() if route else (404, {"detail": "Not Found"})


def vllm_api_key_error(server, path, headers):
    """AuthenticationMiddleware: only paths under /v1 need the key."""
    keys = server.args.api_key
    if not keys or not path.startswith("/v1"):
        return None
    if headers.get("Authorization", "") in [f"Bearer {k}" for k in keys]:
        return None
    return 401, {"error": "Unauthorized"}


# ---- Ollama's API (--api ollama) ------------------------------------------------

def ollama_model_name(server):
    return server.args.alias or "torch-worker:latest"


def ollama_loaded(server):
    # Listed until its memory is gone, as Ollama's runner is until its
    # process has exited (sched.go): not once the unload has begun.
    if getattr(server, "ollama_unloading", False):
        return True
    with server.engine.cond:
        return not server.engine.sleep_level


def ollama_unload_when_idle(server):
    """sched.go expireRunner: unloaded at once when no request holds the
    model, else when the last one ends (the request is not cut short)."""
    engine = server.engine
    with engine.cond:
        while engine.processing():
            engine.cond.wait()
        if engine.sleep_level:
            return  # not loaded: nothing to do
        server.ollama_unloading = True
    try:
        vllm_sleep(server, 2)  # weights and KV caches dropped, memory given back
    finally:
        server.ollama_unloading = False
    print("model unloaded", flush=True)


def ollama_load(server):
    if not ollama_loaded(server):
        vllm_wake_up(server)  # the weights rebuilt from their seed
        print("model loaded", flush=True)


def ollama_now():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())


def ollama_ps(server):
    """PsHandler: api.ProcessResponse; size is what the model holds."""
    if not ollama_loaded(server):
        return 200, {"models": []}
    engine, chat = server.engine, server.chat
    with chat.lock:
        weights = sum(p.numel() * p.element_size() for p in engine.model.parameters())
        kv = sum(cache_bytes(s.caches) for s in engine.slots) + chat.cache_bytes()
    name = ollama_model_name(server)
    return 200, {"models": [{
        "name": name, "model": name, "size": weights + kv,
        "digest": hashlib.sha256(name.encode()).hexdigest(),
        "details": {"parent_model": "", "format": "gguf", "family": ARCHITECTURE,
                    "families": [ARCHITECTURE], "parameter_size": "", "quantization_level": "F32"},
        "expires_at": "2318-08-11T00:00:00Z", "size_vram": 0,
        "context_length": server.engine.slots[0].n_ctx}]}


def ollama_generate(server, raw):
    """GenerateHandler: unload, load, or a completion."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return 400, {"error": str(e)}
    if not isinstance(body, dict):
        return 400, {"error": "json: cannot unmarshal into Go value of type api.GenerateRequest"}
    model = body.get("model")
    if model != ollama_model_name(server):
        return 404, {"error": f"model '{model}' not found"}
    prompt = body.get("prompt") or ""
    done = {"model": model, "created_at": ollama_now(), "response": "", "done": True}
    if not prompt and body.get("keep_alive", None) == 0:
        threading.Thread(target=ollama_unload_when_idle, args=(server,), daemon=True).start()
        return 200, dict(done, done_reason="unload")
    ollama_load(server)
    if not prompt:
        return 200, dict(done, done_reason="load")
    options = body.get("options") if isinstance(body.get("options"), dict) else {}
    n_predict = options.get("num_predict", 16)
    if not isinstance(n_predict, int) or isinstance(n_predict, bool) or n_predict < 1:
        return 400, {"error": "num_predict must be at least 1"}
    try:
        answer = server.engine.complete({"prompt": prompt, "n_predict": n_predict,
                                         "cache_prompt": True})
    except ServerError as e:
        return e.code, {"error": str(e)}
    result = dict(done, response=answer["content"],
                  done_reason="length" if answer["stop_type"] == "limit" else "stop",
                  prompt_eval_count=answer["tokens_evaluated"],
                  eval_count=answer["tokens_predicted"])
    if body.get("stream", True) is not False:
        return 200, json.dumps(result, separators=(",", ":")) + "\n"  # one NDJSON line
    return 200, result


def ollama_route(server, method, path, raw):
    routes = {("GET", "/"): lambda: (200, "Ollama is running"),
              ("GET", "/api/version"): lambda: (200, {"version": "0.0.0-infervisor-torch-worker"}),
              ("GET", "/api/ps"): lambda: ollama_ps(server),
              ("POST", "/api/generate"): lambda: ollama_generate(server, raw)}
    route = routes.get((method, path))
    return route() if route else (404, "404 page not found")


MAX_BODY = 1 << 20


def make_handler(server):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status, body, headers=()):
            if isinstance(body, bytes):  # no body (vLLM's Response(status_code=200))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if isinstance(body, str):
                data, kind = body.encode(), "text/plain; version=0.0.4"
            else:
                # safe_json_to_str: nlohmann's compact dump, UTF-8 as it is.
                data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
                kind = "application/json; charset=utf-8"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def gate(self, path):
            """The middlewares, in server-http.cpp's order: loading, API key."""
            if server.engine is None and path not in ("/models", "/v1/models", "/api/tags"):
                return loading_error()
            return api_key_error(server, path, self.headers)

        def dispatch(self, route):
            url = urlparse(self.path)
            refused = self.gate(url.path)
            if refused:
                return self.answer(*refused)
            try:
                result = route(url)
            except ServerError as e:
                return self.answer(e.code, e.body())
            except Exception as e:  # ex_wrapper: any other exception is a 500
                return self.answer(500, ServerError(str(e) or "unknown error", "server").body())
            if result is None:
                return self.answer(404, {"error": {"message": "File Not Found",
                                                   "type": "not_found_error", "code": 404}})
            headers = ()
            if url.path == "/metrics":
                headers = (("Process-Start-Time-Unix", str(server.engine.metrics.t_start)),)
            self.answer(*result, headers=headers)

        def vllm_dispatch(self, method, raw=b""):
            url = urlparse(self.path)
            refused = vllm_api_key_error(server, url.path, self.headers)
            try:
                result = refused or vllm_route(server, method, url, raw)
            except Exception:  # starlette: an unhandled exception is a bare 500
                result = (500, "Internal Server Error")
            self.answer(*result)

        def ollama_dispatch(self, method, raw=b""):
            try:
                result = ollama_route(server, method, urlparse(self.path).path, raw)
            except Exception as e:  # gin's recovery: a 500
                result = (500, {"error": str(e)})
            self.answer(*result)

        def do_GET(self):
            if server.args.api == "vllm":
                return self.vllm_dispatch("GET")
            if server.args.api == "ollama":
                return self.ollama_dispatch("GET")
            self.dispatch(lambda url: get_routes(server, url.path))

        def do_POST(self):
            length = self.headers.get("Content-Length") or "0"
            if not length.isdigit() or int(length) > MAX_BODY:
                self.close_connection = True  # the body is not read
                return self.answer(413, {"error": {"code": 413, "message": "bad or too large body",
                                                   "type": "invalid_request_error"}})
            raw = self.rfile.read(int(length))
            if server.args.api == "vllm":
                return self.vllm_dispatch("POST", raw)
            if server.args.api == "ollama":
                return self.ollama_dispatch("POST", raw)
            self.dispatch(lambda url: post_routes(server, url, raw))

        def log_message(self, *_):
            pass  # the journal gets the worker's own lines, not one per probe

    return Handler


def serve_http(server):
    httpd = ThreadingHTTPServer((server.args.host, server.args.port), make_handler(server))
    httpd.daemon_threads = True  # a stuck request does not hold the exit
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    # As llama-server's "server is listening on": with --port 0, the port.
    print(f"listening on http://{server.args.host}:{httpd.server_address[1]}", flush=True)
    return httpd


# ---- main ---------------------------------------------------------------------

def load(server, notify):
    """Builds the model (or loads the cooperative checkpoint), then opens
    for requests: /health turns 200."""
    args = server.args
    model = build_model(args)
    chat = Chat(args, model)
    restore_from = os.environ.get("INFERVISOR_RESTORE_FROM")
    if restore_from and os.path.exists(os.path.join(restore_from, STATE_FILE)):
        chat.restore(restore_from)
        print(f"resumed from {restore_from} (served {chat.served} requests, "
              f"{chat.tokens} tokens, context {chat.context()} tokens before)", flush=True)
    if args.load_delay_ms:
        time.sleep(args.load_delay_ms / 1000)
    params = sum(p.numel() for p in model.parameters())
    server.chat = chat
    server.engine = Engine(args, model)
    print(f"model ready: {args.layers} layers, dim {args.dim}, {params} parameters, "
          f"{args.parallel} slots of {server.engine.slots[0].n_ctx} tokens", flush=True)
    notify.send("READY=1\nSTATUS=serving")


def main():
    args = parse_args()
    torch.set_num_threads(1)
    notify = Notifier()
    checkpoint_asked = threading.Event()
    stopping = threading.Event()
    stuck_asked = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: checkpoint_asked.set())
    signal.signal(signal.SIGUSR2, lambda *_: stuck_asked.set())
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())

    server = Server(args)
    if args.api == "vllm":
        load(server, notify)  # vLLM listens once its model is loaded
        serve_http(server)
    elif args.api == "ollama":
        load(server, notify)
        if not args.preload:  # Ollama loads a model at its first request
            vllm_sleep(server, 2)
        serve_http(server)
    else:
        serve_http(server)  # 503 "Loading model" meanwhile
        load(server, notify)
    chat, engine = server.chat, server.engine

    watchdog_s = int(os.environ.get("WATCHDOG_USEC", "0")) / 2e6
    next_request = time.monotonic()
    while not stopping.is_set():
        if stuck_asked.is_set():
            stuck_asked.clear()
            engine.become_stuck()
            print("stuck: decoding stops, /health stays 200", flush=True)
        if checkpoint_asked.is_set():
            checkpoint_asked.clear()
            directory = os.environ.get("INFERVISOR_CHECKPOINT_DIR")
            if directory:
                size = chat.save(directory)
                print(f"checkpoint written: served {chat.served}, context {chat.context()} "
                      f"tokens, {size} bytes", flush=True)
                notify.send("CHECKPOINT=1")
        if args.serve_interval_ms and time.monotonic() >= next_request:
            served = chat.generate(args.tokens_per_request)
            if served is not None:
                print(f"served request {served} (context {chat.context()} tokens, "
                      f"KV cache {chat.cache_bytes() >> 20} MiB)", flush=True)
            next_request += args.serve_interval_ms / 1000
        if watchdog_s:
            notify.send("WATCHDOG=1")
        stopping.wait(0.05 if not watchdog_s else min(0.05, watchdog_s))
    print(f"stopping after {chat.served} requests", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
