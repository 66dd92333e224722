"""The two models of benchmarks/train_step.py (shared by every peer).

mlp: 1024 -> 2048 -> 2048 -> 2048 -> 10, ReLU: 10.5 M parameters, 42 MB of
     float32 gradients in 8 tensors; communication-heavy.
cnn: four 3x3 conv blocks on 3x32x32 images and two dense layers: ~0.75 M
     parameters (3 MB of gradients) in 12 tensors; compute-heavy.
"""
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                         nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        chans = [3, 32, 64, 128, 256]
        self.convs = nn.ModuleList(nn.Conv2d(cin, cout, 3, padding=1)
                                   for cin, cout in zip(chans, chans[1:]))
        self.fc1 = nn.Linear(256 * 2 * 2, 384)
        self.fc2 = nn.Linear(384, classes)

    def forward(self, x):
        for conv in self.convs:
            x = F.max_pool2d(F.relu(conv(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def build_model(name):
    """(model, shape of one input sample, number of classes)."""
    if name == "mlp":
        return mlp(), (1024,), 10
    if name == "cnn":
        return SmallCNN(), (3, 32, 32), 10
    raise ValueError(f"unknown model {name!r}; choose mlp or cnn")
