"""Built-in models for the probe (plain torch, no torchvision): the IGB paper's MLPs and CNNs, a ResNet, a ViT.

igb-initial-guessing-bias.txt App. I.4 describes the architectures; its kernel sizes and CNN-B's channel list were
lost in extraction, and its images are 28×28 / 32×32 while the offline stand-in (``digits``) is 8×8. Choices:
- MLPs (SHLP / MHLP): ``igbsym.validation.simulate.sequential`` of a ``NetSpec`` with weights from
  ``igbsym.validation.simulate.sample_weights`` (so init i of the probe IS init i of ``simulate``; Kaiming normal,
  bias-free unless the NetSpec has sigma_b); ``mlp`` = one ReLU layer of 512, ``mlp-linear`` the same with the
  identity, ``mlp-maxpool`` ReLU 512 + MaxPool1d(4), ``mlp-deep`` four ReLU layers of 256.
- CNN-A: conv(16, k=5, stride 1, padding 2) → act → pool(k=2, stride 2) → conv(64, k=5, padding 2) → act →
  pool(k=4, stride 4) → Linear to the outputs (the paper's strides/paddings; k=5 is what padding 2 keeps 'same';
  the pool kernels equal the strides).
- CNN-B: five × [conv(k=3, padding 1) → act → pool(k=3, stride 1, padding 1)] with channels (8, 8, 16, 16, 16),
  then conv(16, k=5, padding 2) → act → pool(k=2, stride 2), then conv(16, k=5, padding 2) → act →
  pool(k=3, stride 2, padding 1) → Linear. The paper's five convs use padding 4 (k = 9 'same' on 28×28); on 8×8 a
  9×9 kernel covers the whole image, so we keep 'same' convs with k = 3, and size-preserving stride-1 pools
  (padding 1) so an 8×8 input survives all seven pools. The last pool differs from the previous only by its
  kernel, as in the paper.
  Variants (App. I.1): ``relu-maxpool`` (ReLU + MaxPool2d) and ``linear-avgpool`` (identity + AvgPool2d).
- ``resnet``: a small ResNet (the paper used ResNet34): conv3×3(16) → BN → ReLU, three basic blocks
  (16, 32, 64 channels; strides 1, 2, 2; conv-BN-ReLU-conv-BN + shortcut, 1×1 conv + BN when the shape changes,
  then ReLU), global average pool, Linear. BatchNorm in training mode (torch's default): it normalises over the
  probe's data batches (``batch_size``).
- ``vit``: a small ViT: patch embedding conv (patch p = max(1, H // 4), dim 32) + class token + learned positions
  (N(0, 0.02²)), two ``nn.TransformerEncoderLayer`` (4 heads, feed-forward 64, pre-norm, GELU, dropout 0),
  LayerNorm, Linear head on the class token.
Every convolution and Linear keeps torch's default init (``reset_parameters``) and bias; ``zero_bias`` in the
probe sets the biases to zero (the paper's setting).
- Spec-built models (``SpecFactory``: the ops' own torch modules, weights N(0, σ_w²/fan_in) with the He gain σ_w² = 2,
  no biases), the networks of the data theory's validation (igbsym.nngp; ``spec_ops(name, width, ...)`` gives them
  at any width): ``mlp-layernorm`` two ReLU layers of 512 with LayerNorm after φ (where its centring acts),
  ``mlp-residual`` a Dense embedding of 256 and two linear-first residual blocks x + F(x), F = Dense → ReLU,
  ``cnn-linear`` conv(64, k=5, padding 2) → AvgPool2d(2) → conv(64, k=5, padding 2) → AvgPool2d(4) → Linear
  (CNN-A's linear variant without biases), ``cnn-gap`` conv(64, k=3, padding 1) → ReLU → conv(64, k=3,
  padding 1) → ReLU → global average pool → Linear; ``mlp-batchnorm`` one layer of 512, Linear → BatchNorm1d
  (training mode, no affine part; over the probe's batches) → ReLU (issue 46).
"""
from __future__ import annotations

import importlib
import inspect

import torch
from torch import nn

from igbsym.errors import InputError

from igbsym import ops as O
from igbsym.spec import mlp_ops, resnet_ops

from .simulate import NetSpec, sample_weights, sequential

MLPS = {"mlp": dict(widths=(512,)), "mlp-linear": dict(widths=(512,), activation="identity"),
        "mlp-maxpool": dict(widths=(512,), pool=4), "mlp-deep": dict(widths=(256,) * 4)}
CNN_VARIANTS = {"relu-maxpool": (nn.ReLU, nn.MaxPool2d), "linear-avgpool": (nn.Identity, nn.AvgPool2d)}
SPEC_MODELS = {"mlp-layernorm": 512, "mlp-residual": 256, "cnn-linear": 64, "cnn-gap": 64,
               "mlp-batchnorm": 512}   # name -> width
NAMES = (*MLPS, *(f"cnn-{k}-{v}" for k in "ab" for v in CNN_VARIANTS), "resnet", "vit", *SPEC_MODELS)


def spec_ops(name: str, width: int, n_classes: int = 2) -> tuple:
    """The ops of a spec-built model (module docstring) at hidden width ``width``, readout included; the
    built-in MLPs of ``MLPS`` too (their NetSpec's ops)."""
    if name in MLPS:
        kw = MLPS[name]
        L = len(kw["widths"])
        return (O.Flatten(),) + mlp_ops(L, kw.get("activation", "relu"), pool=kw.get("pool"),
                                         widths=(width,) * L) + (O.Dense(n_classes),)
    if name == "mlp-layernorm":
        body = mlp_ops(2, "relu", "layernorm", "post", widths=(width, width))
    elif name == "mlp-batchnorm":
        body = mlp_ops(1, "relu", "batchnorm", "pre", B=256, widths=(width,))
    elif name == "mlp-residual":
        body = resnet_ops(2, "relu", 1.0, width=width)
    elif name == "cnn-linear":
        return (O.Conv2d(width, 5, 1, 2), O.Act("identity"), O.AvgPool2d(2), O.Conv2d(width, 5, 1, 2),
                O.Act("identity"), O.AvgPool2d(4), O.Flatten(), O.Dense(n_classes))
    elif name == "cnn-gap":
        return (O.Conv2d(width, 3, 1, 1), O.Act("relu"), O.Conv2d(width, 3, 1, 1), O.Act("relu"), O.GlobalAvgPool(),
                O.Flatten(), O.Dense(n_classes))
    else:
        raise InputError(f"no spec-built model {name!r}; allowed: {', '.join((*MLPS, *SPEC_MODELS))}")
    return (O.Flatten(),) + body + (O.Dense(n_classes),)


def init_op(op, module: nn.Module) -> None:
    """Weights N(0, σ_w²/fan_in) and biases N(0, σ_b²) of an op's torch module, from the global torch RNG
    (composite ops: their children's modules in the branch)."""
    if op.children:
        for child, sub in zip(op.children, module.branch):
            init_op(child, sub)
        return
    sigma_w = getattr(op, "sigma_w", None)
    weight = getattr(module, "weight", None)
    if sigma_w is None or weight is None:
        return
    with torch.no_grad():
        weight.normal_(0.0, float(sigma_w) / weight[0].numel() ** 0.5)
        if getattr(module, "bias", None) is not None:
            module.bias.normal_(0.0, float(op.sigma_b))


class SpecFactory:
    """``factory(seed)`` → the nn.Sequential of ``ops``' own torch modules for inputs of ``input_shape`` (module
    docstring); the probe seeds the global torch RNG per init before calling it."""

    def __init__(self, ops, input_shape):
        self.ops, self.input_shape = tuple(ops), tuple(int(s) for s in input_shape)

    def __call__(self, seed: int) -> nn.Module:
        x, mods = torch.zeros(2, *self.input_shape), []
        with torch.no_grad():
            for op in self.ops:
                mod = op.torch(x.shape[1])
                init_op(op, mod)
                x = mod(x)
                mods.append(mod)
        return nn.Sequential(*mods)

    def __repr__(self):
        return f"SpecFactory({len(self.ops)} ops, input {self.input_shape})"


class MLPFactory:
    """``factory(seed, i)`` → the MLP of init i of ``simulate(spec, ..., seed=seed)`` (Flatten + Sequential)."""

    def __init__(self, spec: NetSpec):
        self.spec = spec

    def __call__(self, seed: int, i: int) -> nn.Module:
        weights = sample_weights(self.spec, [i], seed, torch.device("cpu"), torch.float32)
        return nn.Sequential(nn.Flatten(), *sequential(self.spec, weights, 0))

    def __repr__(self):
        return f"MLPFactory({self.spec})"


def _flat(features: nn.Module, input_shape) -> int:
    with torch.no_grad():
        return int(features(torch.zeros(2, *input_shape)).flatten(1).shape[1])


def _stage(c_in, c_out, k, pad, act, pool, pk, ps, pp=0):
    return [nn.Conv2d(c_in, c_out, k, stride=1, padding=pad), act(), pool(pk, stride=ps, padding=pp)]


def cnn_a(input_shape, n_classes: int, variant: str = "relu-maxpool", channels=(16, 64)) -> nn.Sequential:
    """CNN-A of App. I.4 (module docstring); ``channels`` scales its two stages (the width studies of README App. I)."""
    act, pool = CNN_VARIANTS[variant]
    c1, c2 = channels
    feats = nn.Sequential(*_stage(input_shape[0], c1, 5, 2, act, pool, 2, 2), *_stage(c1, c2, 5, 2, act, pool, 4, 4),
                          nn.Flatten())
    return nn.Sequential(*feats, nn.Linear(_flat(feats, input_shape), n_classes))


def cnn_b(input_shape, n_classes: int, variant: str = "relu-maxpool", channels=(8, 8, 16, 16, 16)) -> nn.Sequential:
    """CNN-B of App. I.4 (module docstring)."""
    act, pool = CNN_VARIANTS[variant]
    layers, c = [], input_shape[0]
    for c_out in channels:
        layers += _stage(c, c_out, 3, 1, act, pool, 3, 1, 1)
        c = c_out
    layers += _stage(c, 16, 5, 2, act, pool, 2, 2) + _stage(16, 16, 5, 2, act, pool, 3, 2, 1)
    feats = nn.Sequential(*layers, nn.Flatten())
    return nn.Sequential(*feats, nn.Linear(_flat(feats, input_shape), n_classes))


class BasicBlock(nn.Module):
    """ResNet basic block: conv-BN-ReLU-conv-BN plus the (projected) input, then ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Identity() if stride == 1 and c_in == c_out else nn.Sequential(
            nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
        self.relu2 = nn.ReLU()

    def forward(self, x):
        return self.relu2(self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x))))) + self.shortcut(x))


def resnet(input_shape, n_classes: int, channels=(16, 32, 64)) -> nn.Sequential:
    """A small ResNet with basic blocks and BatchNorm (module docstring)."""
    blocks, c = [], channels[0]
    for j, c_out in enumerate(channels):
        blocks.append(BasicBlock(c, c_out, 1 if j == 0 else 2))
        c = c_out
    return nn.Sequential(nn.Conv2d(input_shape[0], channels[0], 3, 1, 1, bias=False), nn.BatchNorm2d(channels[0]),
                         nn.ReLU(), *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, n_classes))


class ViT(nn.Module):
    """A small Vision Transformer (module docstring)."""

    def __init__(self, input_shape, n_classes: int, dim: int = 32, depth: int = 2, heads: int = 4, ff: int = 64):
        super().__init__()
        c, h, w = input_shape
        p = max(1, h // 4)
        self.embed = nn.Conv2d(c, dim, p, stride=p)
        tokens = (h // p) * (w // p)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, tokens + 1, dim))
        self.blocks = nn.Sequential(*(nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, activation="gelu",
                                                                 batch_first=True, norm_first=True)
                                      for _ in range(depth)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_classes)
        self.reset_parameters()

    def reset_parameters(self):
        """The module's own parameters (the children reset themselves): class token and positions N(0, 0.02²)."""
        nn.init.normal_(self.cls, std=0.02)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], 1) + self.pos
        return self.head(self.norm(self.blocks(t))[:, 0])


def build(name: str, input_shape, n_classes: int):
    """The named built-in model for inputs of ``input_shape`` (one data point) and ``n_classes`` outputs:
    an ``nn.Module`` (re-initialised per init by the probe) or, for the MLPs, an ``MLPFactory``."""
    input_shape = tuple(int(s) for s in input_shape)
    if name in MLPS:
        d = 1
        for s in input_shape:
            d *= s
        return MLPFactory(NetSpec(d, n_classes=n_classes, **MLPS[name]))
    if name not in NAMES:
        raise InputError(f"unknown model {name!r}; built-in models are {', '.join(NAMES)} (or module.path:factory)")
    if name in SPEC_MODELS:
        if name.startswith("cnn") and len(input_shape) != 3:
            raise InputError(f"model {name!r} needs image data [D, C, H, W], got points of shape {input_shape}")
        return SpecFactory(spec_ops(name, SPEC_MODELS[name], n_classes), input_shape)
    if len(input_shape) != 3:
        raise InputError(f"model {name!r} needs image data [D, C, H, W], got points of shape {input_shape}")
    if name.startswith("cnn-"):
        return (cnn_a if name[4] == "a" else cnn_b)(input_shape, n_classes, name[6:])
    return resnet(input_shape, n_classes) if name == "resnet" else ViT(input_shape, n_classes)


def takes_index(factory) -> bool:
    """True if a model factory takes (seed, i) rather than one per-init seed (see validation/probe.py)."""
    try:
        params = [p for p in inspect.signature(factory).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) >= 2


def resolve_model(spec: str, input_shape, n_classes: int):
    """A built-in name (igbsym.validation.models.NAMES) or ``module.path:attr`` (an nn.Module instance or class, or a
    factory seed -> nn.Module / (seed, i) -> nn.Module)."""
    if ":" not in spec:
        return build(spec, input_shape, n_classes)
    mod_name, _, attr = spec.partition(":")
    try:
        obj = getattr(importlib.import_module(mod_name), attr)
    except Exception as exc:   # ImportError, AttributeError, or an error raised while importing the module
        raise InputError(f"cannot import model factory {spec!r}: {type(exc).__name__}: {exc}") from None
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        try:
            return obj()
        except Exception as exc:
            raise InputError(f"cannot instantiate {spec!r} without arguments: {exc}") from None
    if not (isinstance(obj, torch.nn.Module) or callable(obj)):
        raise InputError(f"{spec!r} is a {type(obj).__name__}, not an nn.Module or a factory")
    return obj
