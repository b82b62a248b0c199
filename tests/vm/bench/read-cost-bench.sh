#!/bin/bash
# Read-cost benchmark (issue 28), a VM payload that reports figures and
# asserts nothing: what one pread of each statistics file the sampler reads
# costs (CPU time of the reader, kernel side included), in the guest's real
# cgroup v2 with 20 idle processes each in its own cgroup, and of the host
# files in /proc; a pread of /dev/null is the baseline.
#
#   tests/vm/run-vm --build-dir DIR --results DIR/vm-results/read-cost \
#       -- tests/vm/bench/read-cost-bench.sh
set -eu
root=/sys/fs/cgroup/readcost
mkdir -p $root
echo "+memory +cpu +pids +io" >/sys/fs/cgroup/cgroup.subtree_control || true
echo "+memory +cpu +pids +io" >$root/cgroup.subtree_control || true
for i in $(seq 20); do
  mkdir -p $root/w$i
  sh -c "echo \$\$ > $root/w$i/cgroup.procs; exec sleep 100000" &
done
sleep 1
python3 - <<'PY' | tee "$VMTEST_RESULTS/read-cost.txt"
import os, time
root="/sys/fs/cgroup/readcost"
files=["memory.current","memory.max","memory.high","memory.swap.current","memory.swap.max",
       "memory.pressure","cpu.pressure","io.pressure","memory.events","cpu.stat","memory.stat",
       "memory.peak","pids.current"]
N=2000
print("per read, microseconds of CPU (user+sys), 20 workers x %d" % N)
for f in files:
    fds=[os.open(f"{root}/w{i}/{f}", os.O_RDONLY) for i in range(1,21)]
    t=time.process_time()
    for _ in range(N):
        for fd in fds: os.pread(fd, 8192, 0)
    d=time.process_time()-t
    print(f"{f:22s} {d/N/20*1e6:8.2f}")
    for fd in fds: os.close(fd)
for f in ["/proc/meminfo","/proc/vmstat","/proc/pressure/memory","/proc/pressure/cpu","/proc/pressure/io"]:
    fd=os.open(f,os.O_RDONLY); t=time.process_time()
    for _ in range(N*5): os.pread(fd,16384,0)
    d=time.process_time()-t
    print(f"{f:22s} {d/N/5*1e6:8.2f}")
# empty loop cost
fd=os.open("/dev/null",os.O_RDONLY); t=time.process_time()
for _ in range(N*20): os.pread(fd,8192,0)
print(f"{'/dev/null (baseline)':22s} {(time.process_time()-t)/N/20*1e6:8.2f}")
PY
