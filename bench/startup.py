"""Start-up to serving: spawn `switchyard serve`, wait for its banner, and time until
the first /healthz answer. usage: python3 startup.py BINARY [ARGS...] → milliseconds."""
import subprocess, sys, time, urllib.request

t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[1:] + ["--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
line = p.stdout.readline()
addr = line.split("http://")[1].split(" ")[0]
while True:
    try:
        urllib.request.urlopen(f"http://{addr}/healthz").read()
        break
    except Exception:
        time.sleep(0.001)
print(round((time.perf_counter() - t0) * 1000, 1))
p.terminate()
p.wait()
