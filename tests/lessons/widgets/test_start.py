from gptlib.lessons.widgets.start import chapter_model_size, format_model_size, model_size_explorer


def test_chapter_model_size_adds_up():
    sizes = chapter_model_size(65)
    assert sizes["total"] == 842_752
    assert sizes["embeddings"] == 65 * 128 + 256 * 128
    parts = sizes["embeddings"] + sizes["blocks"] + sizes["final norm and unembedding"]
    assert parts == sizes["total"]
    # each extra character costs one embedding row and one unembedding column
    assert chapter_model_size(66)["total"] - sizes["total"] == 2 * 128


def test_format_and_widget_redraw():
    assert format_model_size({"total": 842752}) == "total = 842,752"
    box = model_size_explorer(10)
    slider, out = box.children
    slider.value = 65
    assert slider.description == "vocab size"
