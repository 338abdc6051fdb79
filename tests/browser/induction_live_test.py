#!/usr/bin/env python3
"""The induction page ("What Attention Computes" live) in a real browser: headless Chromium through
Selenium, the network off.

    induction_live_test.py INDUCTION OUT_DIR [STEPS | MODEL.safetensors]

Trains the induction lab's 2-block model for STEPS steps (2000, the lab's default: the induction
heads form after about 1,500), or loads MODEL (as `induction --save` writes it), and writes the page
with it (induction --live, with --json), opens it
from file:// and checks, with every number read from the page itself:
  - no network request, no console error; the library (WebAssembly) loads the model and computes;
  - the batch figures the page computes (head scores, first- and later-copy loss, later-copy accuracy,
    accuracy per position over the lab's batch of 256 sequences) equal the native lab's --json for
    the same model and sequences to float32 rounding, and the page shows them;
  - zeroing the lab's induction heads (the button): the page's figures equal the native lab's with
    the same heads zeroed, and the later-copy accuracy falls well below the unablated one;
  - why this prediction: the gradient the page shows for an embedding (a bar) and an attention weight
    (a heat-map cell, chosen with the keyboard) each agree with the central difference beside it;
  - the link: the URL's fragment, opened afresh, brings back the sequence, the ablations, the
    position and the checked entry, with the same numbers;
  - the latencies (a position's study and gradient and redraw; the whole batch), written to
    OUT_DIR/induction_timing.json and printed (recorded, not asserted).
Screenshots go to OUT_DIR/screenshots. Prints "SKIPPED: <why>" without Chromium or Selenium.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_kit import *  # noqa: E402,F401,F403  (exits "SKIPPED: why" without Chromium or Selenium)

F32 = lambda a, b: abs(a - b) <= 1e-5 + 1e-4 * abs(b)  # noqa: E731  float32 rounding, as the wasm check allows


def state(driver, key):
    return driver.execute_script(f"return hgInduction.{key}")


def wait(driver, what, cond, timeout=120):
    """Waits until the page is idle and `cond` (JavaScript over hgInduction, `s`) holds."""
    end = time.time() + timeout
    while time.time() < end:
        ok = driver.execute_script(
            "const s = hgInduction; return s.module !== null && !s.busy() && !!(" + cond + ")")
        if ok:
            return True
        if driver.execute_script("return hgInduction.error"):
            break
        time.sleep(0.05)
    check(False, f"{what}: the page did not get there ({driver.execute_script('return hgInduction.error')})")
    return False


def same_figures(page, lab, what):
    """The page's combined batch figures against the lab's, to float32 rounding."""
    bad = []
    for k in ("first", "later", "acc"):
        if not F32(page[k], lab[k]):
            bad.append(f"{k}: page {page[k]}, lab {lab[k]}")
    pa, la = page["acc_per_position"], lab["acc_per_position"]
    if len(pa) != len(la) or not all(F32(a, b) for a, b in zip(pa, la)):
        bad.append(f"accuracy per position: page {pa[:5]}..., lab {la[:5]}...")
    for k in ("prev", "induction"):
        if k in lab:
            for b, (pr, lr) in enumerate(zip(page[k], lab[k])):
                if len(pr) != len(lr) or not all(F32(x, y) for x, y in zip(pr, lr)):
                    bad.append(f"{k} block {b + 1}: page {pr}, lab {lr}")
    check(not bad, f"{what}: the page's batch figures differ from the native lab's: {bad}")


def shown(driver, name):
    els = driver.find_elements(By.CSS_SELECTOR, f'[data-figure="{name}"]')
    return els[0].text if els else None


def checked_entry(driver, what):
    c = state(driver, "why && hgInduction.why.check")
    if not check(bool(c), f"{what}: the page shows no checked entry"):
        return
    a, n = c["analytic"], c["numeric"]
    check(abs(a - n) <= 1e-6 + 1e-4 * abs(n), f"{what}: gradient {a} vs central difference {n}")
    text = driver.find_element(By.ID, "ind-check").text
    check(len(text) > 0, f"{what}: #ind-check is empty")
    return c


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    lab_bin, out = sys.argv[1], sys.argv[2]
    given = sys.argv[3] if len(sys.argv) == 4 else "2000"
    model = ["--load", given] if given.endswith(".safetensors") else ["--steps", given]
    shots = os.path.join(out, "screenshots")
    os.makedirs(shots, exist_ok=True)
    page = os.path.join(out, "induction.html")
    report = os.path.join(out, "induction.json")
    t0 = time.time()
    r = subprocess.run([lab_bin, *model, "--quiet", "--no-pictures", "--out", os.path.join(out, "lab"),
                        "--json", report, "--live", page], capture_output=True, text=True)
    if r.returncode not in (0, 1):  # 1: a check of the lab not met (a short run); the page is still written
        print(r.stdout, r.stderr)
        sys.exit(f"induction_live_test: the lab exited {r.returncode}")
    print(f"induction_live_test: {' '.join(model)}: the page written in {time.time() - t0:.0f} s")
    lab = json.load(open(report))["sections"]["the live page"]
    heads = [tuple(h) for h in lab["induction_heads"]]

    driver = start(offline=True)
    try:
        log = load(driver, page)
        t_load = time.time()
        wait(driver, "loading and the first batch", "s.batch && s.batch.result && s.baseline", 180)
        print(f"induction_live_test: the page loaded and computed its batch in {time.time() - t_load:.1f} s")
        check(not network_requests(log, page), f"network requests: {network_requests(log, page)}")
        check(state(driver, "error") is None, f"the page reports an error: {state(driver, 'error')}")
        driver.save_screenshot(os.path.join(shots, "induction_loaded.png"))

        # The batch: the lab's sequences, the lab's numbers.
        base = state(driver, "batch.result")
        check(state(driver, "batch.n") == 256 and state(driver, "batch.done") == 256, "the batch is the lab's 256 sequences")
        same_figures(base, lab, "no head zeroed")
        for k in ("first", "later", "acc"):
            check(shown(driver, f"batch-{k}") == f"{base[k]:.4f}", f"batch-{k} shows {shown(driver, f'batch-{k}')!r}, "
                                                                   f"computed {base[k]:.4f}")
        for b in range(2):
            for h in range(4):
                for k in ("prev", "induction"):
                    s = shown(driver, f"batch-{k}-{b}-{h}")
                    check(s == f"{base[k][b][h]:.4f}", f"batch-{k}-{b}-{h} shows {s!r}, computed {base[k][b][h]:.4f}")

        # Zero the lab's induction heads: the native lab's numbers with the same heads zeroed, and the
        # later copies break.
        driver.find_element(By.ID, "ind-ablate-induction").click()
        want = json.dumps(sorted(list(h) for h in heads), separators=(",", ":"))
        wait(driver, "zeroing the induction heads", f"s.batch.result && JSON.stringify(s.batch.ablate) === '{want}'")
        abl = state(driver, "batch.result")
        same_figures(abl, lab["ablated"], f"heads {heads} zeroed")
        check(abl["acc"] < base["acc"] - 0.2, f"zeroing the induction heads: later-copy accuracy {base['acc']:.3f} -> "
                                              f"{abl['acc']:.3f}, not lower by 0.2")
        check(shown(driver, "base-acc") == f"{base['acc']:.4f}", "the unablated accuracy is shown beside the ablated")
        for b, h in heads:
            check(driver.find_element(By.CSS_SELECTOR, f'[data-ablate="{b}-{h}"]').get_attribute("aria-pressed") == "true",
                  f"block {b + 1} head {h + 1}'s button is not pressed")
        driver.save_screenshot(os.path.join(shots, "induction_ablated.png"))
        print(f"induction_live_test: later-copy accuracy {base['acc']:.3f}, with the induction heads zeroed "
              f"{abl['acc']:.3f} (the native lab: {lab['acc']:.3f} and {lab['ablated']['acc']:.3f})")
        driver.find_element(By.ID, "ind-clear").click()
        wait(driver, "clearing the ablations", "s.ablate.length === 0 && s.batch.result && s.batch.ablate.length === 0")

        # Why this prediction: a later-copy position, an embedding's bar, then a weight by keyboard.
        L = state(driver, "L")
        t = min(62, L + 5)
        pos = driver.find_element(By.ID, "ind-pos")
        pos.send_keys(Keys.CONTROL, "a")
        pos.send_keys(str(t), Keys.ENTER)
        wait(driver, f"position {t}", f"s.position === {t} && s.why")
        j = t + 1 - L  # the earlier copy's token that target t copies
        driver.find_element(By.CSS_SELECTOR, f'[data-bar="{j}"]').click()
        wait(driver, "an embedding's check", f"s.why.check && s.check && s.check.embedding === {j}")
        checked_entry(driver, f"the embedding of position {j}")
        cell = driver.find_element(By.CSS_SELECTOR, '[data-map="1-0"]')
        cell.click()
        cell.send_keys(Keys.ARROW_DOWN, Keys.ARROW_RIGHT, Keys.ENTER)
        wait(driver, "a weight's check by keyboard", "s.why.check && s.check && s.check.weight")
        w = checked_entry(driver, "an attention weight chosen with the keyboard")
        driver.execute_script("const m = document.getElementById('ind-mode'); m.value = 'grad';"
                              "m.dispatchEvent(new Event('change', {bubbles: true}));")
        wait(driver, "the gradient colours", "s.mode === 'grad'")
        driver.save_screenshot(os.path.join(shots, "induction_why.png"))

        # A link keeps the view: new sequence, an ablation, then the URL opened afresh.
        driver.find_element(By.ID, "ind-new").click()
        wait(driver, "a new sequence", "s.study && s.why")
        driver.find_element(By.CSS_SELECTOR, '[data-ablate="0-1"]').click()
        wait(driver, "zeroing block 1 head 2", "s.ablate.length === 1 && s.why")
        view = {k: state(driver, k) for k in ("tokens", "L", "seed", "ablate", "position", "check", "mode")}
        losses = state(driver, "study.loss")
        why = state(driver, "why")
        url = driver.current_url
        check("#" in url, f"the state is not in the URL: {url}")
        driver.get("about:blank")
        driver.get(url)
        wait(driver, "the link opened afresh", "s.study && s.why", 180)
        again = {k: state(driver, k) for k in view}
        check(again == view, f"the link reopens another view: {again} instead of {view}")
        check(state(driver, "study.loss") == losses, "the link's losses differ")
        check(state(driver, "why.check") == why.get("check"), "the link's checked entry differs")
        driver.save_screenshot(os.path.join(shots, "induction_link.png"))

        # Latencies: positions stepped with the keyboard; the batch from the first load.
        n0 = len(state(driver, "times.study"))
        for step in range(12):
            pos = driver.find_element(By.ID, "ind-pos")
            pos.send_keys(Keys.CONTROL, "a")
            pos.send_keys(str(20 + 3 * step), Keys.ENTER)
            wait(driver, f"position {20 + 3 * step}", f"s.position === {20 + 3 * step} && s.times.study.length > {n0 + step}")
        study_ms = state(driver, "times.study")[n0:]
        batch_ms = state(driver, "times.batch")
        timing = {"study_and_why_median_ms": statistics.median(study_ms), "study_and_why_max_ms": max(study_ms),
                  "positions": len(study_ms), "batch_ms": batch_ms, "sequences": 256,
                  "browser": driver.capabilities.get("browserVersion")}
        json.dump(timing, open(os.path.join(out, "induction_timing.json"), "w"), indent=1)
        print(f"induction_live_test: a position's study, gradient and redraw: median {timing['study_and_why_median_ms']:.0f} "
              f"ms (max {timing['study_and_why_max_ms']:.0f}) over {len(study_ms)}; a batch of 256: "
              f"{', '.join(f'{b / 1000:.2f}' for b in batch_ms)} s (recorded, not asserted)")
        errors = console_errors(driver)
        check(not errors, f"console errors: {errors}")
    finally:
        driver.quit()
    finish("induction_live_test", shots)


if __name__ == "__main__":
    main()
