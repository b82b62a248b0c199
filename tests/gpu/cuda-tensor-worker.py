#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A CUDA worker for tests/gpu/real-gpu-check: holds a tensor of a known size
and content on the GPU and keeps proving that the content is intact.

It allocates --mib MiB on cuda:0 (int32 values 0..999 repeating), sends
READY=1 on $NOTIFY_SOCKET, then every 0.2 s sums the tensor on the GPU and
writes one line to --status (atomically, by rename):

    PID ROUNDS SUM EXPECTED ok|mismatch

A frozen worker writes nothing, so ROUNDS going up again after a resume
shows it runs; `ok` shows that its GPU memory came back as it left.

--fake: no torch and no GPU (the script's rehearsal): the "tensor" is host
memory, summed on the CPU.
"""
import argparse
import os
import socket
import time


def notify(message):
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return
    if path.startswith("@"):
        path = "\0" + path[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.connect(path)
        s.send(message.encode())


def write_status(path, line):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(line + "\n")
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=int, default=1024, help="MiB to hold on the GPU (default 1024)")
    p.add_argument("--status", required=True, help="file the proof line is written to")
    p.add_argument("--fake", action="store_true", help="host memory instead of a GPU")
    args = p.parse_args()
    elements = args.mib * (1 << 20) // 4
    if args.fake:
        import array
        block = array.array("i", range(1000))
        tensor = block * (elements // 1000)

        def total():
            return sum(tensor)
    else:
        import torch
        tensor = (torch.arange(elements, dtype=torch.int64, device="cuda:0") % 1000).to(torch.int32)
        torch.cuda.synchronize()

        def total():
            return int(tensor.sum(dtype=torch.int64).item())
    expected = total()
    notify("READY=1\nSTATUS=holding %d MiB\n" % args.mib)
    rounds = 0
    while True:
        rounds += 1
        now = total()
        write_status(args.status, "%d %d %d %d %s" % (os.getpid(), rounds, now, expected,
                                                      "ok" if now == expected else "mismatch"))
        time.sleep(0.2)


if __name__ == "__main__":
    main()
