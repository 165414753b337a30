"""The schema page of ``lakemeta graph`` (``schema_view``): layers, collapsed overlaps, and the page in a
real browser (Debian's Chromium, which ``make test`` installs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakemeta.config import FkConfig
from lakemeta.fks.schema_view import Edge, layers, order_layers, render_page, schema_views

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


def fk(dep: str, ref: str, column: str = "id") -> dict:
    return {"fk_table": dep, "fk_columns": [column], "pk_table": ref, "pk_columns": ["id"]}


FKS = [
    fk("shop/lineitem", "shop/orders"),
    fk("shop/lineitem", "shop/parts"),
    fk("shop/orders", "shop/customers"),
    fk("shop/customers", "shop/nations"),
    fk("shop/parts_2024", "shop/suppliers"),  # a copy of parts, collapsed with it
    fk("shop/employees", "shop/employees", "manager"),  # a self-reference
    fk("web/cities", "web/countries", "country"),
    fk("web/cities", "shop/nations", "nation"),  # across schemas: counted, not drawn
]


def test_layers_put_referencing_tables_above_and_break_cycles() -> None:
    edges = [Edge(f["fk_table"], f["pk_table"], "", "fk") for f in FKS[:4]]
    nodes = ["shop/customers", "shop/lineitem", "shop/nations", "shop/orders", "shop/parts"]
    assert layers(nodes, edges) == {
        "shop/lineitem": 3, "shop/orders": 2, "shop/customers": 1, "shop/nations": 0, "shop/parts": 0,
    }  # fmt: skip
    cycle = [Edge("a", "b", "", "fk"), Edge("b", "a", "", "fk"), Edge("b", "c", "", "fk")]
    assert layers(["a", "b", "c"], cycle) == {"a": 2, "b": 1, "c": 0}
    ordered = order_layers(layers(nodes, edges), edges)
    assert ordered[0] == ["shop/lineitem"] and set(ordered[-1]) == {"shop/nations", "shop/parts"}


def test_views_per_schema_graph_with_overlaps_collapsed() -> None:
    overview, views = schema_views(FKS, [("shop/parts", "shop/parts_2024")], None, FkConfig().schema_of)
    drawn = {(v.schema, tuple(v.nodes)) for v in views}
    assert drawn == {
        (
            "shop",
            (
                "shop/customers",
                "shop/lineitem",
                "shop/nations",
                "shop/orders",
                "shop/parts",
                "shop/suppliers",
            ),
        ),
        ("shop", ("shop/employees",)),
        ("web", ("web/cities", "web/countries")),
    }
    big = next(v for v in views if len(v.nodes) == 6)
    assert big.members["shop/parts"] == ["shop/parts", "shop/parts_2024"]
    assert (
        Edge("shop/parts", "shop/suppliers", "(id) \u2192 (id)", "fk") in big.edges
    )  # redirected to the group
    ys = {node: y for node, (_, y) in big.position.items()}
    assert ys["shop/lineitem"] < ys["shop/orders"] < ys["shop/customers"] < ys["shop/nations"]
    assert (
        overview["shop"]["fks"] == 6
        and overview["web"]["fks"] == 2
        and overview["shop"]["overlap_groups"] == {"shop/parts"}
    )


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium and chromium-driver: make test installs them"
)
def test_the_page_searches_and_zooms_in_a_real_browser(tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    overview, views = schema_views(FKS, [("shop/parts", "shop/parts_2024")], None, FkConfig().schema_of)
    page = tmp_path / "schemas.html"
    page.write_text(render_page(overview, views, "test lake"), encoding="utf-8")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        browser.get(page.as_uri())
        assert len(browser.find_elements(By.CSS_SELECTOR, "svg.view")) == 3
        browser.find_element(By.ID, "search").send_keys("parts_2024")
        hits = browser.find_elements(By.CSS_SELECTOR, "g.table.hit")
        assert [h.get_attribute("data-name") for h in hits] == ["shop/parts shop/parts_2024"]
        assert len(browser.find_elements(By.CSS_SELECTOR, "g.table.dim")) == 8  # of 9 nodes
        assert browser.find_element(By.ID, "found").text == "1 found"
        view = browser.find_element(By.ID, "view0")

        def view_box() -> list[float]:
            return [
                float(v)
                for v in browser.execute_script("return arguments[0].getAttribute('viewBox')", view).split()
            ]

        before = view_box()
        ActionChains(browser).scroll_to_element(view).scroll_from_origin(
            webdriver.common.actions.wheel_input.ScrollOrigin.from_element(view), 0, -200
        ).perform()
        assert view_box()[2] < before[2]  # zoomed in
        browser.save_screenshot(str(tmp_path / "schemas.png"))
    finally:
        browser.quit()
