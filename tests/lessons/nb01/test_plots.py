"""gptlib.lessons.nb01.plots: the tables plotted and the explorer's view updated in place."""

import numpy as np
import torch
from matplotlib.figure import Figure

from gptlib.lessons.nb01.experiments import position_summary
from gptlib.lessons.nb01.plots import PositionView, plot_position_tables
from gptlib.lessons.shared.references import sinusoidal_positions


def test_plot_position_tables_draws_vectors_and_similarities_per_table():
    tables = {"sinusoidal": sinusoidal_positions(16, 8), "learned": torch.randn(16, 8)}
    fig = plot_position_tables(tables, Figure())
    images = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    assert [image.shape for image in images] == [(16, 8), (16, 16), (16, 8), (16, 16)]
    np.testing.assert_allclose(np.diag(images[1]), 1.0, rtol=1e-6)


def test_the_tables_colour_scale_is_centred_on_zero():
    # a table with every value negative but one small positive: white must still sit at 0
    table = torch.full((4, 3), -2.0)
    table[0, 0] = 0.5
    fig = plot_position_tables({"skewed": table}, Figure())
    vmin, vmax = fig.axes[0].images[0].get_clim()
    assert (vmin, vmax) == (-2.0, 2.0)


def test_view_update_resizes_to_the_new_table():
    view = PositionView(Figure())
    for T, d in ((32, 8), (128, 64)):
        summary = position_summary(T, d, 10000.0)
        view.update(summary)
        assert view.table.get_array().shape == (T, d)
        assert view.similarity.get_array().shape == (T, T)
        assert view.vec_ax.get_xlim() == (-0.5, d - 0.5)
        np.testing.assert_allclose(view.line.get_ydata(), summary.similarity[0].numpy())


def test_view_marks_the_first_rival_only_when_there_is_one():
    view = PositionView(Figure())
    view.update(position_summary(64, 2, 10000.0))
    assert list(view.rival.get_xdata()) == [6]
    assert "position 6 looks as close to 0 as 1 does" in view.title.get_text()
    view.update(position_summary(128, 64, 10000.0))
    assert len(view.rival.get_xdata()) == 0
    assert "no rival" in view.title.get_text()


def test_view_labels_its_reference_line_and_has_colorbars():
    fig = Figure()
    view = PositionView(fig)
    labels = [t.get_text() for t in view.line_ax.get_legend().get_texts()]
    assert labels == ["cosine(P_0, P_t)", "level of P_1 (neighbour)"]
    assert len(fig.axes) == 5  # three panels, two colorbars


def test_the_legend_names_the_rival_only_when_one_is_drawn():
    view = PositionView(Figure())

    def legend() -> list[str]:
        return [t.get_text() for t in view.line_ax.get_legend().get_texts()]

    view.update(position_summary(64, 2, 10000.0))
    assert legend() == ["cosine(P_0, P_t)", "level of P_1 (neighbour)", "first rival"]
    view.update(position_summary(128, 64, 10000.0))
    assert legend() == ["cosine(P_0, P_t)", "level of P_1 (neighbour)"]
