"""No nan statistic is ever printed: a test with too little data says how much it had and why
it was not tested."""
from resharpen.experiments.ledger import stats


def test_too_few_pairs_print_no_nan():
    result = stats.paired([0.1], [0.2])
    text = result.describe()
    assert "nan" not in text.lower() and "n=1" in text and "not tested" in text


def test_a_constant_variable_prints_no_nan():
    text = stats.spearman([1, 2, 3, 4, 5, 6], [1, 1, 1, 1, 1, 1]).describe()
    assert "nan" not in text.lower() and "a constant variable" in text


def test_enough_data_prints_the_statistics():
    text = stats.paired([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.2, 0.4, 0.5, 0.5, 0.9, 0.8]).describe()
    assert "t=" in text and "p=" in text and "nan" not in text.lower()
