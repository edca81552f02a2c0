"""Shared helpers for the bench scripts (run as ``python bench/<script>.py``, so this is importable)."""
import time


def best_of(fn, repeat=5):
    """The fastest of ``repeat`` wall-clock timings of ``fn()``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def user_mlp(d_in: int, depth: int, width: int = 100, activation=None):
    """The network a user writes per init (the IGB paper's code): a fresh ``nn.Sequential`` of ``depth``
    Linear(·, width) → activation (an nn.Module class; ReLU by default) blocks and a Linear(·, 2) readout,
    ``kaiming_normal_`` weights, zero biases."""
    from torch import nn
    activation = activation or nn.ReLU
    layers, fan = [], d_in
    for _ in range(depth):
        layers += [nn.Linear(fan, width), activation()]
        fan = width
    net = nn.Sequential(*layers, nn.Linear(fan, 2))
    for m in net:
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight)
            nn.init.zeros_(m.bias)
    return net
