"""Every page of both editions works in a real browser: tabs, copy buttons, search, language."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ray_serve_npu_tooling.docs.site import EDITIONS
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

#: Each edition's path below the site's root, as a URL prefix.
ROOTS = {language: f"{directory}/" if directory else "" for language, directory in EDITIONS.items()}
_CJK = re.compile(r"[\u4e00-\u9fff]")
_SUBSTITUTION = re.compile(r"\{\{\s*\w+\s*\}\}")


def _open(browser: WebDriver, url: str) -> None:
    browser.get(url)
    WebDriverWait(browser, 20).until(
        lambda b: b.execute_script("return document.readyState") == "complete"
    )


def _console_errors(browser: WebDriver) -> list[str]:
    return [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def _wait_for_copy_buttons(browser: WebDriver, count: int) -> None:
    """sphinx-copybutton adds one button per code block once the page has loaded."""
    WebDriverWait(browser, 10).until(
        lambda b: len(b.find_elements(By.CSS_SELECTOR, "button.copybtn")) == count
    )


def _result_pages(browser: WebDriver) -> set[str]:
    links = browser.find_elements(By.CSS_SELECTOR, "ul.search li a")
    return {re.split(r"[?#]", link.get_attribute("href"))[0].rsplit("/", 1)[-1] for link in links}


def _visible(browser: WebDriver, selector: str) -> list:
    return [e for e in browser.find_elements(By.CSS_SELECTOR, selector) if e.is_displayed()]


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_page_has_copy_buttons_and_no_console_errors(
    browser: WebDriver, site_url: str, pages: list[str], edition: str, screenshots: Path
) -> None:
    total_code_blocks = 0
    for page in pages:
        _open(browser, f"{site_url}/{ROOTS[edition]}{page}")
        code_blocks = len(browser.find_elements(By.CSS_SELECTOR, "div.highlight pre"))
        _wait_for_copy_buttons(browser, code_blocks)
        # Every {{ name }} filled in, also in blocks a page includes from another page.
        unfilled = [block for block in _code_blocks(browser) if _SUBSTITUTION.search(block)]
        assert unfilled == [], f"{edition}/{page}"
        total_code_blocks += code_blocks
        browser.save_screenshot(str(screenshots / f"{edition}-{page.removesuffix('.html')}.png"))
        assert _console_errors(browser) == [], f"{edition}/{page}"
    assert total_code_blocks > 50


#: The pages whose steps differ between the node kinds, each with synced A2 / A3 tabs.
NODE_KIND_PAGES = ("npu-ascend.html", "vllm-ascend-compose.html", "quickstart.html")


def _node_kind_tabs(browser: WebDriver) -> dict[str, list]:
    """The page's A2 and A3 tab labels of the node-kind sync group."""
    return {
        kind: browser.find_elements(
            By.CSS_SELECTOR,
            f"label.sd-tab-label[data-sync-group='node-kind'][data-sync-id='{kind}']",
        )
        for kind in ("a2", "a3")
    }


def _shown(browser: WebDriver, labels: list) -> list[bool]:
    return [
        browser.find_element(By.ID, label.get_attribute("aria-controls")).is_displayed()
        for label in labels
    ]


@pytest.mark.parametrize("page", NODE_KIND_PAGES)
@pytest.mark.parametrize("edition", EDITIONS)
def test_the_a2_and_a3_tabs_switch_together(
    browser: WebDriver, site_url: str, edition: str, page: str, screenshots: Path
) -> None:
    _open(browser, f"{site_url}/{ROOTS[edition]}{page}")
    # sphinx-design remembers the last tab chosen; start from the page's default.
    browser.execute_script("localStorage.clear(); sessionStorage.clear()")
    _open(browser, f"{site_url}/{ROOTS[edition]}{page}")
    panels = _node_kind_tabs(browser)
    # Every tab label of the page is in the node-kind group: no set syncs on its own.
    ungrouped = [
        label.get_attribute("textContent").strip()
        for label in browser.find_elements(By.CSS_SELECTOR, "label.sd-tab-label")
        if label.get_attribute("data-sync-group") != "node-kind"
    ]
    assert ungrouped == [], page
    assert len(panels["a2"]) == len(panels["a3"]) >= 2, page

    assert _shown(browser, panels["a2"]) == [True] * len(panels["a2"])
    assert not any(_shown(browser, panels["a3"]))
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", panels["a3"][0])
    panels["a3"][0].click()
    # sphinx-design syncs tab sets on the same key: one click switches every A2/A3 pair.
    WebDriverWait(browser, 5).until(lambda _: all(_shown(browser, panels["a3"])))
    assert not any(_shown(browser, panels["a2"]))
    # The A3 container maps all sixteen devices; some A3 panel shows it.
    a3_texts = [
        browser.find_element(By.ID, label.get_attribute("aria-controls")).text
        for label in panels["a3"]
    ]
    assert any("davinci15" in text for text in a3_texts), a3_texts
    browser.save_screenshot(
        str(screenshots / f"{edition}-{page.removesuffix('.html')}-tabs-a3.png")
    )
    assert _console_errors(browser) == []


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_node_kind_chosen_on_one_page_opens_the_next(
    browser: WebDriver, site_url: str, edition: str
) -> None:
    base = f"{site_url}/{ROOTS[edition]}"
    _open(browser, f"{base}npu-ascend.html")
    browser.execute_script("localStorage.clear(); sessionStorage.clear()")
    _open(browser, f"{base}npu-ascend.html")
    a3 = _node_kind_tabs(browser)["a3"][0]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", a3)
    a3.click()
    # The same sync group on every page: the choice carries to the pages after it.
    for page in NODE_KIND_PAGES[1:]:
        _open(browser, f"{base}{page}")
        panels = _node_kind_tabs(browser)
        assert all(_shown(browser, panels["a3"])), page
        assert not any(_shown(browser, panels["a2"])), page
    browser.execute_script("localStorage.clear(); sessionStorage.clear()")


@pytest.mark.parametrize("edition", EDITIONS)
def test_search_finds_npu(
    browser: WebDriver, site_url: str, edition: str, screenshots: Path
) -> None:
    _open(browser, f"{site_url}/{ROOTS[edition]}search.html?q=NPU")
    expected = {"npu-ascend.html", "troubleshooting.html"}
    # Sphinx lists the results one by one; wait for the ones this search must find.
    WebDriverWait(browser, 20).until(lambda b: expected <= _result_pages(b))
    browser.save_screenshot(str(screenshots / f"{edition}-search-npu.png"))
    assert _console_errors(browser) == []


def test_the_language_switch_goes_to_the_same_page_and_back(
    browser: WebDriver, site_url: str, screenshots: Path
) -> None:
    _open(browser, f"{site_url}/tuning.html")
    english_heading = browser.find_element(By.TAG_NAME, "h1").text
    _visible(browser, "a.language-switcher-link[hreflang='zh-CN']")[0].click()
    WebDriverWait(browser, 10).until(lambda b: b.current_url.endswith("/zh_CN/tuning.html"))
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "zh-CN"
    chinese_heading = browser.find_element(By.TAG_NAME, "h1").text
    assert _CJK.search(chinese_heading) and chinese_heading != english_heading
    browser.save_screenshot(str(screenshots / "zh_CN-switched-tuning.png"))

    _visible(browser, "a.language-switcher-link[hreflang='en']")[0].click()
    WebDriverWait(browser, 10).until(lambda b: b.current_url == f"{site_url}/tuning.html")
    assert browser.find_element(By.TAG_NAME, "h1").text == english_heading
    assert _console_errors(browser) == []


#: The width the issue measured at; the site's column layout is the desktop one there.
DESKTOP = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
_TABLES_WIDER_THAN_COLUMN = """
return Array.from(document.querySelectorAll('article.bd-article table')).flatMap((table, i) => {
  const column = document.querySelector('article.bd-article').clientWidth;
  const width = Math.ceil(table.getBoundingClientRect().width);
  return width > column || table.scrollWidth > table.parentElement.clientWidth
    ? [`table ${i + 1}: ${table.scrollWidth} px wide in a ${column} px column`]
    : [];
});
"""


#: Inline code in a table that is a version or a vLLM-Ascend tag, and that the browser laid
#: out on more than one line ("v0.25.1r" / "c1").
_BROKEN_VERSIONS = r"""
return Array.from(document.querySelectorAll('article.bd-article table code'))
  .filter(code => /^v?\d+\.\d+[\w.]*$/.test(code.textContent.trim()))
  .filter(code => code.getClientRects().length > 1 ||
    Array.from(code.querySelectorAll('span')).some(s => s.getClientRects().length > 1))
  .map(code => code.textContent.trim());
"""


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_table_is_wider_than_its_column_at_1280_px(
    browser: WebDriver, site_url: str, pages: list[str], edition: str, screenshots: Path
) -> None:
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", DESKTOP)
    try:
        too_wide: dict[str, list[str]] = {}
        tables = 0
        for page in pages:
            _open(browser, f"{site_url}/{ROOTS[edition]}{page}")
            tables += len(browser.find_elements(By.CSS_SELECTOR, "article.bd-article table"))
            found = browser.execute_script(_TABLES_WIDER_THAN_COLUMN)
            found += [f"{v} breaks" for v in browser.execute_script(_BROKEN_VERSIONS)]
            if found:
                too_wide[page] = found
                browser.save_screenshot(
                    str(screenshots / f"{edition}-{page.removesuffix('.html')}-wide-table.png")
                )
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert tables > 10
    assert too_wide == {}


def _page_of(href: str) -> str:
    """The HTML file a link leads to, without its directory, query and anchor."""
    return re.split(r"[?#]", href)[0].rsplit("/", 1)[-1]


def _sidebar(browser: WebDriver) -> list[tuple[str, str]]:
    """(page, title) of each entry of the left sidebar, in order."""
    return [
        (_page_of(link.get_attribute("href")), link.text)
        for link in browser.find_elements(By.CSS_SELECTOR, "nav.site-nav a.reference.internal")
    ]


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_sidebar_lists_every_page_and_leads_to_each(
    browser: WebDriver, site_url: str, pages: list[str], edition: str, screenshots: Path
) -> None:
    base = f"{site_url}/{ROOTS[edition]}"
    _open(browser, f"{base}index.html")
    # The theme folds header links past five into a "More" menu; the header holds none.
    assert browser.find_elements(By.CSS_SELECTOR, "#pst-nav-more-links") == []
    assert _visible(browser, ".bd-header a.nav-link.nav-internal") == []
    entries = _sidebar(browser)
    assert sorted(page for page, _ in entries) == sorted(set(pages) - {"index.html"})
    captions = [c.text for c in _visible(browser, "nav.site-nav p.caption")]
    assert len(captions) >= 3
    if edition == "zh_CN":
        assert all(_CJK.search(caption) for caption in captions), captions
    for page, title in entries:
        link = browser.find_element(
            By.CSS_SELECTOR, f"nav.site-nav a.reference.internal[href$='{page}']"
        )
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
        link.click()
        WebDriverWait(browser, 10).until(lambda b, page=page: _page_of(b.current_url) == page)
        # The same list on every page, with this page's entry marked as the current one.
        assert [t for _, t in _sidebar(browser)] == [t for _, t in entries], page
        current = browser.find_elements(By.CSS_SELECTOR, "nav.site-nav a[aria-current='page']")
        assert [a.text for a in current] == [title], page
        assert browser.find_element(By.TAG_NAME, "h1").text, page
        assert _console_errors(browser) == [], f"{edition}/{page}"
    browser.save_screenshot(str(screenshots / f"{edition}-sidebar.png"))


def _code_blocks(browser: WebDriver) -> list[str]:
    """The text of every code block on the page, hidden tab panels included."""
    return [
        pre.get_attribute("textContent").strip()
        for pre in browser.find_elements(By.CSS_SELECTOR, "article div.highlight pre")
    ]


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_quick_start_is_one_click_from_the_index(
    browser: WebDriver, site_url: str, edition: str, screenshots: Path
) -> None:
    base = f"{site_url}/{ROOTS[edition]}"
    _open(browser, f"{base}index.html")
    link = _visible(browser, "article.bd-article a.reference.internal[href$='quickstart.html']")
    assert link, "the index page links to the quick start"
    link[0].click()
    WebDriverWait(browser, 10).until(lambda b: _page_of(b.current_url) == "quickstart.html")
    # Its commands are included from npu-ascend.md, where the harness tests them.
    blocks = _code_blocks(browser)
    _wait_for_copy_buttons(browser, len(blocks))
    browser.save_screenshot(str(screenshots / f"{edition}-quickstart-walk.png"))
    assert len(blocks) >= 8
    assert _console_errors(browser) == []
