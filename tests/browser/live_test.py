#!/usr/bin/env python3
"""The live page in a real browser (headless Chromium through Selenium, the network off).

    live_test.py THREE_TOKEN OUT_DIR

Writes the page (three_token --live), opens it from file:// and checks, with every number read
from the page itself:
  - no network request, no console error; the library (WebAssembly) loads and computes;
  - a title and what to do above everything else (the timing line below the inputs), and no
    command-line flag in any text the page shows, in any state it is taken to;
  - at the text's inputs, the lab's 21 comparisons with the text, each agreeing, and each equal to
    what the native lab reports (--json) to 1e-12;
  - then, edit by edit (entries of Q, K and V typed in, the mask and the scale toggled, another L
    clicked in O, more tokens and wider rows): every gradient the page shows for Q, K, V and S
    equals the native lab's for the same inputs (--q/--k/--v, float64) to 1e-12, and every finite
    difference on the page is within the page's stated bound (|g - fd| <= 1e-5 + 1e-3 |fd|);
  - at the text's Q, K and V with another L, the page says the inputs are the text's and L is not;
  - each break-it fault turns red first at the step it breaks, and that step alone shows the
    fault's rule, marked broken;
  - forward mode: L̇ along Q̇ = e₃₂ equals the backward's (dL/dQ)₃₂;
  - the time from an edit to the redrawn page, over 20 edits, written to OUT_DIR/live_timing.json
    (recorded, not asserted: bench/live-page is where it is measured).
Screenshots go to OUT_DIR/screenshots. Prints "SKIPPED: <why>" without Chromium or Selenium.
"""
import json
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_kit import *  # noqa: E402,F401,F403  (exits "SKIPPED: why" without Chromium or Selenium)

FAULTS = {"dS": "P", "dK": "QKᵀ", "scale": "QKᵀ/√d_k", "dV": "O"}  # the step each breaks: its incoming gradient
BROKEN_RULES = {"dS": "dS = P ∘ dP", "dK": "d(Kᵀ) = Qᵀ d(QKᵀ)ᵀ", "scale": "d(QKᵀ) = d(QKᵀ/√d_k)", "dV": "dV = P dO"}
BOUND = 1e-12


def wait_computed(driver, count, what):
    """Waits until the page has answered `count` requests in all (hgLive.times counts them)."""
    for _ in range(300):
        if driver.execute_script("return hgLive.module !== null && hgLive.times.length >= arguments[0]", count):
            return True
        if driver.execute_script("return hgLive.error"):
            break
        time.sleep(0.05)
    check(False, f"{what}: the page did not recompute ({driver.execute_script('return hgLive.error')})")
    return False


def computed(driver):
    return driver.execute_script("return hgLive.times.length")


def type_into(driver, name, i, j, text):
    """Types a number into the field of name[i][j] as a person would: select all, type, one input event a key."""
    field = driver.find_element(By.CSS_SELECTOR, f'#edit-{name} input[data-i="{i}"][data-j="{j}"]')
    before = computed(driver)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text)
    wait_computed(driver, before + 1, f"typing {text} into {name}[{i}][{j}]")


def choose(driver, select_id, value):
    before = computed(driver)
    driver.execute_script("const s = document.getElementById(arguments[0]); s.value = arguments[1];"
                          "s.dispatchEvent(new Event('change', {bubbles: true}));", select_id, value)
    wait_computed(driver, before + 1, f"choosing {value} in #{select_id}")


def click(driver, css):
    before = computed(driver)
    driver.find_element(By.CSS_SELECTOR, css).click()
    wait_computed(driver, before + 1, f"clicking {css}")


def shown_gradients(driver):
    """{label: whole gradient} for every gradient the page shows, walking every step, and whether
    each finite difference on the page is within its bound: [(step, label, ok)]."""
    n = driver.execute_script("return hgPage.data[0].steps.length")
    grads, checks = {}, []
    for k in range(n):
        driver.execute_script("hgPage.go(arguments[0])", k)
        for g in driver.find_elements(By.CSS_SELECTOR, "#step .grad[data-role=out]"):
            label = g.get_attribute("data-label")
            boxes = {}
            for t in g.find_elements(By.CSS_SELECTOR, ".tensor"):
                name = t.find_element(By.CSS_SELECTOR, ".name").text
                boxes[name] = [float(c.get_attribute("data-v").replace("inf", "Infinity").replace("Infinity", "inf"))
                               for c in t.find_elements(By.CSS_SELECTOR, "[data-v]")]
            whole = next((v for name, v in boxes.items() if name.endswith("(whole)")), None)
            part = next(iter(boxes.values()))
            value = whole if whole is not None else part
            if g.get_attribute("data-ok") is not None:
                grads[label] = value
                fd = boxes.get("finite diff.")
                ok = fd is not None and len(fd) == len(value) and all(
                    abs(a - b) <= 1e-5 + 1e-3 * abs(b) for a, b in zip(value, fd))
                checks.append((k + 1, label, ok and g.get_attribute("data-ok") == "true"))
    return grads, checks


def matrix_flag(rows):
    return ";".join(",".join(repr(float(x)) for x in r) for r in rows)


def native(lab, out, state, tag):
    """The native lab's report for the page's inputs (its --json)."""
    path = os.path.join(out, f"native_{tag}.json")
    flags = ["--json", path, "--q", matrix_flag(state["Q"]), "--k", matrix_flag(state["K"]),
             "--v", matrix_flag(state["V"]), "--loss", f"o{state['loss'][0] + 1},{state['loss'][1] + 1}"]
    if not state["mask"]:
        flags.append("--no-mask")
    if not state["scale"]:
        flags.append("--no-scale")
    run(lab, *flags)
    return json.load(open(path))


def compare_with_native(driver, lab, out, tag):
    state = driver.execute_script("return {Q: hgLive.Q, K: hgLive.K, V: hgLive.V, loss: hgLive.loss,"
                                  " mask: hgLive.mask, scale: hgLive.scale}")
    report = native(lab, out, state, tag)
    ways = next(v for k, v in report["sections"].items() if k.startswith("each gradient"))
    want = {"Q": flat(ways["dQ"]["primitive tape"]), "K": flat(ways["dK"]["primitive tape"]),
            "V": flat(ways["dV"]["primitive tape"]), "S": flat(ways["dS"]["tape (softmax entry)"])}
    grads, checks = shown_gradients(driver)
    failed_before = len(failures)
    for label, values in want.items():
        got = grads.get(label)
        check(got is not None and close(got, values, BOUND),
              f"{tag}: dL/d{label} on the page {got} vs the native lab's {values}")
    bad = [(k, label) for k, label, ok in checks if not ok]
    check(not bad and len(checks) >= 6, f"{tag}: finite differences outside their bound at {bad} ({len(checks)} checked)")
    if len(failures) == failed_before:
        print(f"live_test: {tag}: dL/dQ, dL/dK, dL/dV, dL/dS equal the native lab's; {len(checks)} finite differences agree")


def first_red(driver):
    n = driver.execute_script("return hgPage.data[0].steps.length")
    for k in range(n):
        driver.execute_script("hgPage.go(arguments[0])", k)
        if driver.find_elements(By.CSS_SELECTOR, "#step .grad[data-ok=false]"):
            return driver.find_element(By.CSS_SELECTOR, "#step .grad[data-role=in]").get_attribute("data-label")
    return None


def broken_rules(driver):
    """[(the step's incoming gradient, the formula's text)] for every step whose formula is marked broken."""
    n = driver.execute_script("return hgPage.data[0].steps.length")
    found = []
    for k in range(n):
        driver.execute_script("hgPage.go(arguments[0])", k)
        for f in driver.find_elements(By.CSS_SELECTOR, "#step .formula.broken"):
            found.append((driver.find_element(By.CSS_SELECTOR, "#step .grad[data-role=in]").get_attribute("data-label"),
                          f.text))
    return found


def no_flags(driver, tag):
    """Checks that nothing the page shows names a command-line flag (--loss, --q, ...): its text,
    its tooltips, and every step's rule and the intro, whichever step is on screen."""
    shown = driver.execute_script(
        "const d = hgPage.data[0] || {};"
        "return [document.body.innerText, d.intro || '', d.title || '',"
        " ...(d.steps || []).flatMap((s) => [s.rule || '', s.broken_rule || '']),"
        " ...[...document.querySelectorAll('[title]')].map((e) => e.title)].join('\\n')")
    flags = sorted(set(re.findall(r"--[a-z][a-z-]*", shown)))
    check(not flags, f"{tag}: the page shows command-line flags {flags}")


def time_edits(driver, edits=20):
    """Median milliseconds from an edit to the redrawn, painted page over `edits` edits of Q."""
    for k in range(edits):
        before = computed(driver)
        driver.execute_script("const el = document.querySelector('#edit-Q input[data-i=\"0\"][data-j=\"1\"]');"
                              "el.value = String(arguments[0]); el.dispatchEvent(new Event('input', {bubbles: true}));",
                              round(0.05 * (k + 1), 2))
        wait_computed(driver, before + 1, "a timed edit")
        for _ in range(100):
            if driver.execute_script("return hgLive.times[hgLive.times.length - 1].painted !== null"):
                break
            time.sleep(0.01)
    times = driver.execute_script("return hgLive.times.slice(-arguments[0])", edits)
    return {key: statistics.median(t[key] for t in times) for key in ("compute", "draw", "total", "painted")} | {
        "edits": edits, "painted_min": min(t["painted"] for t in times), "painted_max": max(t["painted"] for t in times)}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    lab, out = sys.argv[1:]
    shots = os.path.join(out, "screenshots")
    os.makedirs(shots, exist_ok=True)
    page = os.path.join(out, "three_token_live.html")
    run(lab, "--live", page)
    text_report = native(lab, out, {"Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1], [1, 1]],
                                    "V": [[1, 0], [0, 2], [3, 3]], "loss": [2, 1], "mask": True, "scale": True}, "text")

    driver = start(offline=True)
    try:
        log = load(driver, page)
        wait_computed(driver, 1, "loading")
        check(network_requests(log, page) == [], "the live page made network requests")

        # What the page is and what to do, first; the timing line below the inputs.
        head = driver.find_element(By.ID, "live-head")
        check(head.find_element(By.TAG_NAME, "h1").text.startswith("Three tokens, live"), f"the title: {head.text!r}")
        for words in ("Q, K or V", "click an entry of O to make it the loss L", "causal mask", "scale", "break it",
                      "turn red"):
            check(words in head.text, f"the instructions say {words!r}: {head.text!r}")
        top = lambda el: driver.execute_script("return arguments[0].getBoundingClientRect().top", el)
        status, editors = driver.find_element(By.ID, "live-status"), driver.find_element(By.CSS_SELECTOR, ".editors")
        check(top(head) < top(editors) < top(status), "the title and instructions first, the inputs, then the timing line")
        check("ms" in status.text, f"the timing line: {status.text!r}")
        no_flags(driver, "the text's inputs")
        check("click o₂,₁ in O to make it L" in driver.find_element(By.ID, "intro").text,
              f"the mask's explanation points at o₂,₁ to click: {driver.find_element(By.ID, 'intro').text!r}")

        # The text's inputs: the lab's 21 comparisons, computed in the browser, each as the native lab has it.
        verdict = driver.find_element(By.ID, "text-verdict").text
        check(verdict == "21 numbers compared with the text: 21 agree, 0 differ.", f"the text's verdict: {verdict!r}")
        rows = driver.find_elements(By.CSS_SELECTOR, "#text-numbers tr[data-agrees]")
        check(len(rows) == 21 and all(r.get_attribute("data-agrees") == "true" for r in rows),
              f"21 rows of the text's numbers, each agreeing ({len(rows)} rows)")
        page_report = driver.execute_script("return hgLive.last.report")
        n = 0
        for section, entries in text_report["sections"].items():
            for key, e in entries.items():
                if "text" not in e:
                    continue
                n += 1
                got = page_report["sections"].get(section, {}).get(key, {}).get("measured")
                if not check(got is not None, f"the text's {key} ({section}) is not on the page"):
                    continue
                a, b = flat(e["measured"] if isinstance(e["measured"], list) else [e["measured"]]), \
                    flat(got if isinstance(got, list) else [got])
                same = a == b if isinstance(e["measured"], str) else close(a, b, BOUND)
                check(same, f"the text's {key} ({section}): the page has {got}, the native lab {e['measured']}")
        check(n == 21, f"the native lab compares 21 numbers with the text, not {n}")
        check(driver.find_element(By.ID, "loss-line").text.startswith("L = o₃,₂ = 2.007"), "L = o₃,₂ = 2.007 is shown")
        compare_with_native(driver, lab, out, "text")
        driver.save_screenshot(os.path.join(shots, "live_text.png"))

        # Edits, one after another, as a learner makes them.
        type_into(driver, "Q", 2, 0, "0.5")
        type_into(driver, "K", 1, 1, "-1.25")
        type_into(driver, "V", 0, 1, "2.5")
        compare_with_native(driver, lab, out, "edited")
        notice = driver.find_element(By.ID, "text-notice").text
        check(notice.startswith("These are not the text's inputs"), f"edited inputs: the notice says {notice!r}")
        click(driver, "#mask")
        compare_with_native(driver, lab, out, "edited, no mask")
        click(driver, "#scale")
        compare_with_native(driver, lab, out, "edited, no mask, no scale")
        click(driver, "#mask")
        click(driver, '#forward td.pick[data-r="1"][data-c="0"]')
        check(driver.execute_script("return hgLive.loss.join()") == "1,0", "clicking o₂,₁ makes it L")
        compare_with_native(driver, lab, out, "edited, no scale, L = o21")
        no_flags(driver, "edited, L = o₂,₁")
        driver.save_screenshot(os.path.join(shots, "live_edited.png"))
        choose(driver, "tokens", "5")
        choose(driver, "dk", "3")
        choose(driver, "dv", "1")
        for (name, i, j, v) in [("Q", 4, 2, "0.75"), ("K", 3, 0, "-0.4"), ("K", 4, 2, "1.5"), ("V", 4, 0, "2")]:
            type_into(driver, name, i, j, v)
        compare_with_native(driver, lab, out, "5 tokens, d_k 3, d_v 1")
        before = computed(driver)  # a word typed into Q: refused in words, nothing recomputed
        field = driver.find_element(By.CSS_SELECTOR, '#edit-Q input[data-i="0"][data-j="0"]')
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys("x")
        check(computed(driver) == before, "a word typed into Q recomputes nothing")
        check("is not a number" in driver.find_element(By.ID, "live-status").text, "a word typed into Q is refused")

        # The script API gives what the page shows: set the edited case again, read the gradients.
        state = driver.execute_script("return {Q: hgLive.Q, K: hgLive.K, V: hgLive.V, loss: hgLive.loss,"
                                      " mask: hgLive.mask, scale: hgLive.scale}")
        grads = driver.execute_script("return hgLive.set(arguments[0]) && hgLive.gradients()", state)
        shown, _ = shown_gradients(driver)
        check(bool(grads) and all(close(grads[k], shown[k], BOUND) for k in ("Q", "K", "V", "S")),
              "hgLive.gradients() is what the page shows")

        # Back to the text; each fault turns its own step red first.
        click(driver, "#reset")
        check(driver.find_element(By.ID, "text-verdict").text.startswith("21 numbers"), "reset brings the text's numbers back")
        # The text's inputs with another L: the notice is about L, not the inputs.
        click(driver, '#forward td.pick[data-r="1"][data-c="0"]')
        notice = driver.find_element(By.ID, "text-notice").text
        check(notice.startswith("These are the text's inputs") and "L is o₂,₁, not the text's o₃,₂" in notice
              and "not the text's inputs" not in notice, f"the text's inputs, L = o₂,₁: the notice says {notice!r}")
        no_flags(driver, "the text's inputs, L = o₂,₁")
        click(driver, '#forward td.pick[data-r="2"][data-c="1"]')
        check(driver.find_element(By.ID, "text-verdict").text.startswith("21 numbers"), "clicking o₃,₂ brings the text's numbers back")
        for fault, step in FAULTS.items():
            choose(driver, "fault", fault)
            check(first_red(driver) == step, f"break {fault}: the first red check is at the step of {first_red(driver)}, "
                                             f"expected {step}")
            rules = broken_rules(driver)
            check(len(rules) == 1 and rules[0][0] == step and BROKEN_RULES[fault] in rules[0][1]
                  and "broken on purpose" in rules[0][1], f"break {fault}: the steps marked broken are {rules}")
            no_flags(driver, f"break {fault}")
            if fault == "dS":
                driver.save_screenshot(os.path.join(shots, "live_break_dS.png"))
        choose(driver, "fault", "none")
        check(first_red(driver) is None, "with no fault, no red check")
        check(broken_rules(driver) == [], "with no fault, no rule marked broken")

        # Forward mode along Q̇ = e₃₂: L̇ is the backward's (dL/dQ)₃₂.
        choose(driver, "mode", "forward")
        choose(driver, "jvp", "q2,1")
        t = driver.execute_script("return hgLive.last.tangent")
        ways = next(v for k, v in text_report["sections"].items() if k.startswith("each gradient"))
        dQ32 = ways["dQ"]["primitive tape"][2][1]
        check(abs(t["dL_reverse"] - dQ32) <= BOUND and abs(t["dL"] - dQ32) <= 1e-9,
              f"forward mode: L̇ {t['dL']} and the backward's {t['dL_reverse']} vs the native (dL/dQ)₃₂ {dQ32}")
        check("meet" in driver.find_element(By.ID, "tangent-verdict").text, "the page says the two modes meet")
        driver.save_screenshot(os.path.join(shots, "live_forward.png"))
        choose(driver, "mode", "backward")

        timing = time_edits(driver)
        json.dump(timing, open(os.path.join(out, "live_timing.json"), "w"), indent=1)
        print(f"live_test: an edit to the redrawn page, median of {timing['edits']}: {timing['painted']:.1f} ms "
              f"(computing {timing['compute']:.1f} ms, drawing {timing['draw']:.1f} ms; recorded, not asserted)")
        errors = console_errors(driver)
        check(not errors, f"console errors while editing: {errors}")
    finally:
        driver.quit()
    finish("live_test", shots)


if __name__ == "__main__":
    main()
