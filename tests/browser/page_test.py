#!/usr/bin/env python3
"""The backward-pass page in a real browser (headless Chromium through Selenium).

    page_test.py THREE_TOKEN TINYCHARLM_PAGE OUT_DIR

Writes the three-token pages (plain and one per "break it" fault) and the lab's --step --json for
each variant, then in Chromium: each page loads with no console error and no network request;
pressing the right-arrow key walks every step of every variant, and the numbers each step shows
equal the lab's JSON; clicking the node of O = P V shows what it saved; each broken page shows
its first red check at the step its fault names; the TinyCharLM block's page draws heatmaps.
Screenshots at 1280 x 800 of three steps go to OUT_DIR/screenshots for a person to look at.

Prints "SKIPPED: <why>" and exits 0 where Chromium, its driver or Selenium is missing.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_kit import *  # noqa: E402,F401,F403  (exits "SKIPPED: why" without Chromium or Selenium)

VARIANTS = [("causal, scaled", []), ("no mask", ["--no-mask"]), ("no scale", ["--no-scale"])]
# The step whose check a fault turns red first: named by its incoming gradient's tensor (in the
# causal, scaled variant).
FAULTS = {"dS": "P", "dK": "QKᵀ", "scale": "QKᵀ/√d_k", "dV": "O"}
def d_of(label):
    """The lab's name for a gradient: dL/dS, or dL/d(QKᵀ/√d_k) when the label is more than a name."""
    return "dL/d" + label if not any(c in label for c in "/·+−- ") else f"dL/d({label})"


def lab_steps(path):
    """{step number: {"in": {name: rows}, "out": {name: rows}}} from the lab's --step --json."""
    steps = {}
    for section in json.load(open(path))["sections"].values():
        for key, value in section.items():
            parts = key.split()
            if len(parts) == 3 and parts[0] == "step" and parts[2] in ("in", "out"):
                steps.setdefault(int(parts[1]), {})[parts[2]] = value
    return steps


def shown(driver, role):
    """{label: the first matrix's values} of the shown step's gradients of that role."""
    out = {}
    for g in driver.find_elements(By.CSS_SELECTOR, f"#step .grad[data-role={role}]"):
        cells = g.find_element(By.CSS_SELECTOR, ".tensor").find_elements(By.CSS_SELECTOR, "[data-v]")
        out[g.get_attribute("data-label")] = [float(c.get_attribute("data-v").replace("inf", "Infinity")
                                                    .replace("Infinity", "inf")) for c in cells]
    return out


def press_right(driver):
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    lab, tiny, out = sys.argv[1:]
    shots = os.path.join(out, "screenshots")
    os.makedirs(shots, exist_ok=True)
    page = os.path.join(out, "three_token.html")
    run(lab, "--html", page)
    jsons = []
    for name, flags in VARIANTS:
        path = os.path.join(out, f"steps_{flags[0][2:] if flags else 'text'}.json")
        run(lab, "--step", "--json", path, *flags)
        jsons.append(lab_steps(path))
    for fault in FAULTS:
        run(lab, "--html", os.path.join(out, f"break_{fault}.html"), "--break", fault)
    tiny_page = os.path.join(out, "tinycharlm.html")
    run(tiny, tiny_page)

    driver = start()
    try:
        log = load(driver, page)
        check(network_requests(log, page) == [], "three_token.html made network requests")
        n_variants = driver.execute_script("return hgPage.data.length")
        check(n_variants == 3, f"three variants on the page, not {n_variants}")
        for v in range(n_variants):
            driver.execute_script("hgPage.selectVariant(arguments[0])", v)
            steps = jsons[v]
            n = driver.execute_script("return hgPage.data[hgPage.state.variant].steps.length")
            check(n == len(steps), f"variant {v}: {n} steps on the page, {len(steps)} in the lab's JSON")
            for k in range(1, n + 1):
                where = driver.find_element(By.ID, "where").text
                check(where.startswith(f"step {k} of {n}"), f"variant {v}: shows '{where}' after {k - 1} presses")
                for role, key in (("in", "in"), ("out", "out")):
                    want = steps.get(k, {}).get(key, {})
                    got = shown(driver, role)
                    for label, values in got.items():
                        name = d_of(label)
                        check(name in want and close(values, flat(want[name])),
                              f"variant {v} step {k}: {name} on the page {values} vs the lab's {want.get(name)}")
                    check(len(got) == len(want), f"variant {v} step {k} {role}: {sorted(got)} vs {sorted(want)}")
                bad = driver.find_elements(By.CSS_SELECTOR, "#step .grad[data-ok=false]")
                check(not bad, f"variant {v} step {k}: a red check on the correct page")
                if v == 0 and k in (1, 4, n):
                    driver.save_screenshot(os.path.join(shots, f"three_token_step{k}.png"))
                press_right(driver)
        # Clicking a node shows its saved tensors: O = P V's matmul saved P and V.
        driver.execute_script("hgPage.selectVariant(0)")
        entry = driver.execute_script(
            "return hgPage.data[0].nodes.find(n => n.op === 'matmul' && n.outputs[0].label === 'O').index")
        node = driver.find_element(By.CSS_SELECTOR, f"#graph g.node[data-entry='{entry}']")
        node.click()
        saved = driver.find_element(By.CSS_SELECTOR, "#node .saved").text
        check("P (left operand a)" in saved and "V (right operand b)" in saved,
              f"clicking O = P V's node shows what it saved: {saved!r}")
        driver.save_screenshot(os.path.join(shots, "three_token_node.png"))

        # Each broken page, every variant walked to its end: the first red check at the step its
        # fault names (the unscaled variant has no scale to forget: no red there).
        for fault, named in FAULTS.items():
            path = os.path.join(out, f"break_{fault}.html")
            load(driver, path)
            for v in range(driver.execute_script("return hgPage.data.length")):
                driver.execute_script("hgPage.selectVariant(arguments[0])", v)
                n = driver.execute_script("return hgPage.data[arguments[0]].steps.length", v)
                first = None
                for k in range(1, n + 1):
                    red = bool(driver.find_elements(By.CSS_SELECTOR, "#step .grad[data-ok=false]"))
                    # Up to the fault the broken page's numbers are the lab's: every step before
                    # it in full, and at it the gradient that arrives (the fault is in what leaves).
                    if first is None:
                        want_step = jsons[v].get(k, {})
                        for role in (("in",) if red else ("in", "out")):
                            for label, values in shown(driver, role).items():
                                name = d_of(label)
                                want = want_step.get(role, {}).get(name)
                                check(want is not None and close(values, flat(want)),
                                      f"break {fault}, variant {v} step {k}: {name} on the page {values} vs the lab's {want}")
                    if first is None and red:
                        first = driver.find_element(By.CSS_SELECTOR, "#step .grad[data-role=in]").get_attribute("data-label")
                        if fault == "dS" and v == 0:
                            driver.save_screenshot(os.path.join(shots, "break_dS.png"))
                    press_right(driver)
                want = named
                if fault == "scale":  # without the mask the scaled scores are S itself
                    want = {0: named, 1: "S", 2: None}[v]
                check(first == want, f"break {fault}, variant {v}: first red check at the step of {first}, expected {want}")

        # A TinyCharLM block: every step walks, heatmaps for the large matrices.
        log = load(driver, tiny_page)
        check(network_requests(log, tiny_page) == [], "tinycharlm.html made network requests")
        n = driver.execute_script("return hgPage.data[0].steps.length")
        heatmaps = 0
        for k in range(1, n + 1):
            heatmaps += len(driver.find_elements(By.CSS_SELECTOR, "#step .heat"))
            check(not driver.find_elements(By.CSS_SELECTOR, "#step .grad[data-ok=false]"),
                  f"tinycharlm step {k}: a red check")
            if k == n:
                driver.save_screenshot(os.path.join(shots, "tinycharlm_last.png"))
            press_right(driver)
        check(heatmaps > 0, "the TinyCharLM page draws its large matrices as heatmaps")
        check(not (errors := console_errors(driver)), f"console errors while stepping: {errors}")
    finally:
        driver.quit()
    finish("page_test", shots)


main()
