from gptlib.lessons.engine.labels import char_labels


def test_invisible_characters_become_symbols():
    assert char_labels("a b\n\t") == ["a", "␣", "b", "⏎", "⇥"]
