"""The lessons' shared engine: the check engine (`checks`), the stored answers (`answers`),
the explorer base (`explorer`), predictions and questions (`predict`), plot labels (`labels`)
and the printed-number convention (`text`). It imports no lesson."""
