#!/usr/bin/env python3
# Requests/s of one GET path against a running `faultline serve` on loopback: CLIENTS threads,
# one request per connection, for SECONDS. Usage: bench_http.py PORT PATH CLIENTS SECONDS
import http.client, sys, threading, time
port, path, threads, secs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
count = [0] * threads; errors = [0] * threads; size = [0]
def run(i):
    end = time.time() + secs
    while time.time() < end:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", path); r = c.getresponse(); body = r.read(); c.close()
        if r.status == 200: count[i] += 1; size[0] = len(body)
        else: errors[i] += 1
ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
t0 = time.time(); [t.start() for t in ts]; [t.join() for t in ts]; dt = time.time() - t0
print(f"{path}: {sum(count)/dt:.0f} req/s ({sum(count)} in {dt:.1f}s, {threads} clients, {size[0]} bytes/response, {sum(errors)} errors)")
