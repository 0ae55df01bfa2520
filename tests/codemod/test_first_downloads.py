"""codemod/first_downloads.py: dataset downloads run on the main process first."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """
import argparse
import torch
from torchvision import datasets, transforms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    device = "cpu" if args.cpu else "cuda"
    transform = transforms.ToTensor()
    # both splits come from one download
    train_set = datasets.MNIST("../data", train=True, download=True,
                               transform=transform)
    test_set = datasets.MNIST("../data", train=False, download=True, transform=transform)
    loader = torch.utils.data.DataLoader(train_set, batch_size=64)
    model = torch.nn.Linear(784, 10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x.flatten(1)), y).backward()
        optimizer.step()
"""


def test_each_download_goes_under_main_process_first_keeping_its_comments():
    result = convert_source(SCRIPT, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    text = result.text
    assert (
        "    # both splits come from one download\n"
        "    with accelerator.main_process_first():\n"
        '        train_set = datasets.MNIST("../data", train=True, download=True,\n'
        "                                   transform=transform)\n"
        "    with accelerator.main_process_first():\n"
        '        test_set = datasets.MNIST("../data", train=False, download=True, transform=transform)\n'
        "    loader = "
    ) in text
    assert text.count("# both splits come from one download") == 1
    assert text.index("accelerator = Accelerator(") < text.index("main_process_first")
    assert any("download at line 14 runs under accelerator.main_process_first()" in note for note in result.notes)
    assert any("download at line 16 runs under accelerator.main_process_first()" in note for note in result.notes)


def test_a_comment_between_two_downloads_stays_once_above_the_second():
    script = SCRIPT.replace("    test_set = datasets.MNIST", "    # the test split\n    test_set = datasets.MNIST")
    text = convert_source(script, "train.py", ConvertOptions()).text
    assert text.count("# the test split") == 1
    assert "    # the test split\n    with accelerator.main_process_first():\n        test_set" in text


def test_a_download_before_the_accelerator_is_named_in_a_note():
    script = SCRIPT.replace(
        "def main():", 'MNIST_TRAIN = datasets.MNIST("../data", train=True, download=True)\n\n\ndef main():'
    )
    result = convert_source(script, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert result.text.count("with accelerator.main_process_first():") == 2  # the two inside main()
    assert '\nMNIST_TRAIN = datasets.MNIST("../data", train=True, download=True)\n' in result.text
    assert any("the download at line(s) 7 runs in every process" in note for note in result.notes)


GCN = """
import os
import tarfile

import requests
import torch


def main():
    cora_url = "https://linqs-public.soe.ucsc.edu/data/cora.tgz"
    if os.path.isfile("cora/cora.content"):
        print("Dataset already downloaded...")
    else:
        print("Downloading dataset...")
        with requests.get(cora_url, stream=True) as tgz_file:
            with tarfile.open(fileobj=tgz_file.raw, mode="r:gz") as tgz_object:
                tgz_object.extractall()
    features = torch.randn(64, 8)
    model = torch.nn.Linear(8, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(3):
        optimizer.zero_grad()
        model(features).sum().backward()
        optimizer.step()
"""


def test_a_hand_written_fetch_before_the_accelerator_is_named_in_a_note():
    """pytorch/examples' GCN fetches Cora with requests and tarfile: every process did, silently."""
    result = convert_source(GCN, "main.py")
    assert result.refused is None, result.refused
    [note] = [n for n in result.notes if "download" in n]
    assert "the download at line(s) 11 runs in every process" in note


def test_a_hand_written_fetch_after_the_accelerator_goes_under_main_process_first():
    fetch = GCN[GCN.index('    cora_url = "') : GCN.index("    features = ")]
    setup = GCN[GCN.index("    features = ") : GCN.index("    for epoch")]
    script = GCN.replace(fetch + setup, setup + fetch)
    result = convert_source(script, "main.py")
    assert result.refused is None, result.refused
    assert "    with accelerator.main_process_first():\n        if os.path.isfile(" in result.text
    line = script.splitlines().index('    if os.path.isfile("cora/cora.content"):') + 1
    assert any(f"download at line {line} runs under accelerator.main_process_first()" in n for n in result.notes)
    assert not any("runs in every process" in n for n in result.notes)


def test_a_call_of_a_helper_that_downloads_goes_under_main_process_first():
    """The ViT example builds its loaders in get_loader(args), with download=True inside."""
    helper = (
        "def get_loader(transform):\n"
        '    train_set = datasets.MNIST("../data", train=True, download=True, transform=transform)\n'
        "    return torch.utils.data.DataLoader(train_set, batch_size=64)\n\n\n"
    )
    script = SCRIPT.replace("def main():", helper + "def main():")
    start = script.index("    # both splits come from one download")
    end = script.index("    model = torch.nn.Linear")
    script = (
        script[:start]
        + "    model = torch.nn.Linear(784, 10).to(device)\n    loader = get_loader(transform)\n"
        + script[end:].replace("    model = torch.nn.Linear(784, 10).to(device)\n", "", 1)
    )
    result = convert_source(script, "main.py")
    assert result.refused is None, result.refused
    assert "    with accelerator.main_process_first():\n        loader = get_loader(transform)\n" in result.text
    assert any("(in get_loader()) runs under accelerator.main_process_first()" in n for n in result.notes)
    assert not any("runs in every process" in n for n in result.notes)


def test_a_dataset_class_of_the_script_that_downloads_in_its_init_goes_under_main_process_first():
    """torchaudio's speech-commands tutorial: SubsetSC.__init__ calls super().__init__(..., download=True)."""
    text = SCRIPT.replace(
        "def main():",
        "class SubsetSC(datasets.MNIST):\n    def __init__(self, train):\n"
        "        super().__init__('../data', train=train, download=True, transform=transforms.ToTensor())\n\n\ndef main():",
    ).replace(
        '    train_set = datasets.MNIST("../data", train=True, download=True,\n                               transform=transform)\n'
        '    test_set = datasets.MNIST("../data", train=False, download=True, transform=transform)\n',
        "    train_set = SubsetSC(True)\n",
    )
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert "    with accelerator.main_process_first():\n        train_set = SubsetSC(True)\n" in result.text
    assert any("(in SubsetSC.__init__()) runs under accelerator.main_process_first()" in n for n in result.notes)


SPAWNED = """\
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision.datasets as datasets
import torchvision.transforms as transforms
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def download_dataset():
    datasets.CIFAR10(root="data", train=True, download=True, transform=transforms.ToTensor())


def train(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    train_dataset = datasets.CIFAR10(root="data", train=True, download=False, transform=transforms.ToTensor())
    sampler = DistributedSampler(train_dataset, num_replicas=world_size, rank=rank)
    loader = DataLoader(train_dataset, batch_size=64, sampler=sampler)
    model = DDP(torch.nn.Linear(3 * 32 * 32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x.flatten(1)), y)
            loss.backward()
            optimizer.step()
    dist.destroy_process_group()


def main():
    if not os.path.exists("data/cifar-10-batches-py"):
        download_dataset()
    mp.spawn(train, args=(2,), nprocs=2, join=True)


if __name__ == "__main__":
    main()
"""


def test_a_download_the_launching_process_makes_before_mp_spawn_is_not_said_to_run_in_every_process():
    """Survey 18 (a tab-indented CIFAR-10 mp.spawn trainer): main() downloads once, then starts the
    workers; the download runs in the launching process alone, so no note asks to download first."""
    result = convert_source(SPAWNED, "train.py")
    assert result.refused is None, result.refused
    assert not any("runs in every process" in n for n in result.notes), result.notes


def test_a_download_in_the_spawned_worker_before_the_accelerator_is_still_named():
    src = SPAWNED.replace(
        'train_dataset = datasets.CIFAR10(root="data", train=True, download=False,',
        'train_dataset = datasets.CIFAR10(root="data", train=True, download=True,',
    )
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    # the worker's own download (line 20) runs in every spawned process; main()'s (line 13) does not
    assert any("the download at line(s) 20 runs in every process" in n for n in result.notes), result.notes
