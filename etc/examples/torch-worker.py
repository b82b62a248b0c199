#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""An inference worker on a real framework (Debian's python3-torch) that
speaks infervisor's protocols, as an example to copy from.

It builds a small decoder-only transformer with random weights (no download),
then serves a chat: every request generates tokens that continue one
conversation, and each token's keys and values go into a KV cache that grows
with the conversation, as a real server's does.

Protocols (see infervisor.yaml(5), CHECKPOINTS and PROBES):
  - HTTP on 127.0.0.1:PORT: GET /health is 503 while the model loads, then 200;
    GET /stats answers the counters as JSON; POST /generate?tokens=N serves a
    request now.
  - sd_notify on $NOTIFY_SOCKET: READY=1 once loaded, WATCHDOG=1 while serving
    (when $WATCHDOG_USEC asks), STATUS= lines, CHECKPOINT=1.
  - Cooperative checkpoint: on SIGUSR1 the worker writes its weights, its KV
    cache and its counters into $INFERVISOR_CHECKPOINT_DIR (written, fsynced,
    then CHECKPOINT=1); started with $INFERVISOR_RESTORE_FROM it loads them
    back instead of building a fresh model, and the conversation goes on from
    where the checkpoint left it.

Run by hand: python3 torch-worker.py --port 8090 (Ctrl-C ends it).
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import torch

STATE_FILE = "state.pt"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8090, help="HTTP port on 127.0.0.1 (default 8090)")
    p.add_argument("--dim", type=int, default=256, help="model width (default 256)")
    p.add_argument("--layers", type=int, default=4, help="decoder layers (default 4)")
    p.add_argument("--vocab", type=int, default=4096, help="vocabulary size (default 4096)")
    p.add_argument("--tokens-per-request", type=int, default=64,
                   help="tokens each request generates (default 64)")
    p.add_argument("--serve-interval-ms", type=int, default=1000,
                   help="a request of its own every N ms; 0: only POST /generate (default 1000)")
    p.add_argument("--max-context", type=int, default=0,
                   help="tokens kept in the KV cache; 0: no limit, it grows (default 0)")
    p.add_argument("--seed", type=int, default=1234, help="seed of the random weights")
    return p.parse_args()


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

    def step(self, token, caches):
        x = self.embed(torch.tensor([token]))
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cache)
        return int(self.head(x)[-1].argmax())


class Chat:
    """The model, its conversation (KV cache) and the counters; one lock."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.ready = False
        self.served = 0
        self.tokens = 0
        self.last_token = 1
        self.restored_from = None
        torch.manual_seed(args.seed)
        self.model = Model(args.vocab, args.dim, args.layers).eval()
        self.caches = [{"k": None, "v": None} for _ in range(args.layers)]

    def context(self):
        k = self.caches[0]["k"]
        return 0 if k is None else k.shape[0]

    def cache_bytes(self):
        return sum(t.numel() * t.element_size() for c in self.caches for t in c.values()
                   if t is not None)

    def generate(self, n):
        with self.lock, torch.no_grad():
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
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return os.path.getsize(path)

    def restore(self, directory):
        state = torch.load(os.path.join(directory, STATE_FILE))
        self.model.load_state_dict(state["model"])
        self.caches = state["caches"]
        self.served, self.tokens = state["served"], state["tokens"]
        self.last_token = state["last_token"]
        self.restored_from = directory


def serve_http(chat, port):
    class Handler(BaseHTTPRequestHandler):
        def answer(self, status, body):
            data = (json.dumps(body) + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = urlparse(self.path).path
            if path == "/health":
                self.answer(200 if chat.ready else 503,
                            {"status": "ok" if chat.ready else "loading"})
            elif path == "/stats":
                self.answer(200, {"served": chat.served, "tokens": chat.tokens,
                                  "context": chat.context(), "kv_cache_bytes": chat.cache_bytes(),
                                  "restored_from": chat.restored_from})
            else:
                self.answer(404, {"error": "not found"})

        def do_POST(self):
            url = urlparse(self.path)
            if url.path != "/generate" or not chat.ready:
                return self.answer(404 if chat.ready else 503, {"error": "no"})
            try:
                n = int(parse_qs(url.query).get("tokens", [chat.args.tokens_per_request])[0])
            except ValueError:
                return self.answer(400, {"error": "tokens must be a whole number"})
            served = chat.generate(max(1, min(n, 4096)))
            self.answer(200, {"served": served, "context": chat.context()})

        def log_message(self, *_):
            pass  # the journal gets the worker's own lines, not one per probe

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main():
    args = parse_args()
    torch.set_num_threads(1)
    notify = Notifier()
    checkpoint_asked = threading.Event()
    stopping = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: checkpoint_asked.set())
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())

    chat = Chat(args)
    serve_http(chat, args.port)  # /health says "loading" meanwhile
    restore_from = os.environ.get("INFERVISOR_RESTORE_FROM")
    if restore_from:
        chat.restore(restore_from)
        print(f"resumed from {restore_from} (served {chat.served} requests, "
              f"{chat.tokens} tokens, context {chat.context()} tokens before)", flush=True)
    params = sum(p.numel() for p in chat.model.parameters())
    print(f"model ready: {args.layers} layers, dim {args.dim}, {params} parameters", flush=True)
    chat.ready = True
    notify.send("READY=1\nSTATUS=serving")

    watchdog_s = int(os.environ.get("WATCHDOG_USEC", "0")) / 2e6
    next_request = time.monotonic()
    while not stopping.is_set():
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
