"""What the browser tests share (page_test.py, live_test.py, bench/live-page): Chromium through
Selenium, a failure list, the lab run as a subprocess, a page loaded and read back.

Importing it exits with "SKIPPED: <why>" (status 0) where Chromium, its driver or Selenium is missing.
"""
import json
import math
import os
import platform
import shutil
import subprocess
import sys


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(0)


try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError:
    skip("Selenium is not installed for this Python (Debian: apt-get install python3-selenium)")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if not CHROMIUM:
    skip("Chromium is not on PATH (Debian: apt-get install chromium chromium-driver)")
if not DRIVER:
    skip("chromedriver is not on PATH (Debian: apt-get install chromium-driver)")

__all__ = ["By", "Keys", "failures", "check", "run", "flat", "close", "start", "load", "network_requests",
           "console_errors", "skip", "finish", "cpu_model"]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")
    return ok


def run(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        sys.exit(f"{os.path.basename(sys.argv[0])}: {' '.join(cmd)} exited {r.returncode}")
    return r.stdout


def flat(rows):
    out = []
    for r in rows:
        out.extend(r if isinstance(r, list) else [r])
    return out


def close(a, b, bound=1e-12):
    return len(a) == len(b) and all(
        (math.isinf(x) and x == y) or abs(x - y) <= bound for x, y in zip(a, b))


def start(offline=False):
    """Headless Chromium with a 1280 x 800 page; `offline`: the network switched off."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
              "--disable-dev-shm-usage", "--hide-scrollbars"]:
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    # The page's own viewport at 1280 x 800 (the window's size includes what headless keeps for itself).
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    if offline:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions",
                               {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    # Chromium logs every request a page makes; turning logging on costs the first load.
    driver.get("about:blank")
    driver.get_log("performance")
    return driver


def console_errors(driver):
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def load(driver, path):
    """Opens the page from file://; returns what Chromium logged of the load (for network_requests)."""
    driver.get("file://" + os.path.abspath(path))
    log = driver.get_log("performance")
    errors = console_errors(driver)
    check(not errors, f"{path}: console errors {errors}")
    return log


def network_requests(log, page):
    """The URLs the page asked for besides itself (the page is file://, its data inline)."""
    urls = []
    for entry in log:
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            url = msg["params"]["request"]["url"]
            if not url.startswith("file://" + os.path.abspath(page)) and not url.startswith("data:"):
                urls.append(url)
    return urls


def finish(name, shots):
    """The test's last lines: where the screenshots are, and its verdict (exit status 1 on a failure)."""
    print(f"screenshots in {shots}")
    if failures:
        sys.exit(f"{name}: {len(failures)} checks failed")
    print(f"{name}: every check passed")


def cpu_model():
    """/proc/cpuinfo's name with its family and model numbers (a virtual machine may say only "AMD EPYC"),
    and the widest vector level it offers (for the benches' records)."""
    info = {}
    for line in open("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    name = info.get("model name") or platform.processor() or "unknown"
    flags = info.get("flags", "").split()
    level = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "baseline"
    return f"{name}, family {info.get('cpu family', '?')} model {info.get('model', '?')} ({level})"
