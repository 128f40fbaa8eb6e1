"""Pearson and Spearman correlation in numpy (no scipy): the regression task's metrics
and the text-embedding task's scored pairs share them."""

import numpy as np


def pearson(x, y):
    """Pearson correlation of two float vectors; 0 when either is constant."""
    x = np.asarray(x, dtype="float64").ravel()
    y = np.asarray(y, dtype="float64").ravel()
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x @ x) * (y @ y))
    return float(x @ y / denominator) if denominator > 0 else 0.0


def rankdata(values):
    """Ranks from 1, ties get the mean of their ranks (scipy's "average")."""
    values = np.asarray(values, dtype="float64").ravel()
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Group equal values; each group's rank is the mean of its positions + 1.
    starts = np.r_[True, sorted_values[1:] != sorted_values[:-1]]
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], len(values)] - 1
    ranks = np.empty(len(values))
    ranks[order] = (first[group] + last[group]) / 2 + 1
    return ranks


def spearman(x, y):
    """Spearman rank correlation (Pearson of average ranks)."""
    return pearson(rankdata(x), rankdata(y))
