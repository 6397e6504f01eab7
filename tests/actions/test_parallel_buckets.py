"""DataParallelSGD's bucketed gradient exchange on two gloo processes: buckets start during the
backward pass, every process gets the exact sum of the processes' gradients (also when a process
has no samples), in the gradients' own dtype, with the byte count of the gradients; one backward
pass per minibatch. And the quantized path's arithmetic: the receiver reconstructs exactly what
the sender kept as sent."""
from __future__ import annotations

import textwrap

import pytest
import torch

import torchrun

from cntkio.actions.parallel.codec import (_pack, _unpack, decode_quantized_sum, dequantize_columns, encode_quantized,
                                     quantize_columns)


SCRIPT = textwrap.dedent("""
    import json
    import torch
    from cntkio.actions.parallel import buckets
    from cntkio.actions._common import dist_context
    from cntkio.actions.parallel import Parallel, ParallelParams

    buckets.FIRST_BUCKET_BYTES = 2048          # several small buckets for this small network
    buckets.BUCKET_BYTES = 4096
    dist = dist_context()
    r = dist.rank
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 40), torch.nn.Tanh(), torch.nn.Linear(40, 30), torch.nn.Tanh(),
                              torch.nn.Linear(30, 3))
    params = list(net.parameters())
    par = Parallel(ParallelParams(method="dataparallelsgd"), dist, params, None)

    def data(rank, step):
        g = torch.Generator().manual_seed(100 * step + rank)
        n = 0 if (step == 1 and rank == 1) else 3 + rank
        return torch.randn(n, 5, generator=g)

    def local_grads(x):
        for p in params:
            p.grad = None
        if x.shape[0]:
            net(x).pow(2).sum().backward()
        return [(p.grad.clone() if p.grad is not None else torch.zeros_like(p)) for p in params]

    log = []
    for step in range(3):
        expected = [a + b for a, b in zip(local_grads(data(0, step)), local_grads(data(1, step)))]
        for p in params:
            p.grad = None
        par.begin_minibatch(0)
        x = data(r, step)
        if x.shape[0]:
            net(x).pow(2).sum().backward()
        started = par.buckets._next                      # buckets started by the backward pass itself
        stats, n = par.aggregate(torch.tensor([1.0, 0.0, float(x.shape[0])], dtype=torch.float64), 0)
        log.append({"started": started, "buckets": len(par.buckets._buckets), "n": n, "stats": stats.tolist(),
                    "equal": all(torch.equal(p.grad, e) for p, e in zip(params, expected)),
                    "dtype": str(params[0].grad.dtype), "bytes": par.bytes_sent})
    par.begin_minibatch(0)
    loss = net(data(r, 0)).pow(2).sum()
    loss.backward(retain_graph=True)
    try:
        loss.backward()
        second = "no error"
    except RuntimeError as e:
        second = str(e)
    print("RESULT " + json.dumps({"log": log, "second": second, "numel": sum(p.numel() for p in params)}))
""")


def test_buckets_overlap_the_backward_pass_and_sum_exactly(tmp_path):
    script = tmp_path / "buckets.py"
    script.write_text(SCRIPT)
    results = torchrun.results(torchrun.launch([script]))
    for rank, res in enumerate(results):
        log = res["log"]
        assert log[0]["buckets"] >= 3
        for step, entry in enumerate(log):
            assert entry["equal"], (rank, step)              # the exact sum of both processes' gradients
            assert entry["dtype"] == "torch.float32"         # reduced in the gradients' dtype
            assert entry["n"] == (3 if step == 1 else 7) and entry["stats"][0] == 2.0
            assert entry["bytes"] == 4 * res["numel"] * (step + 1)
            if step == 1 and rank == 1:
                assert entry["started"] == 0                 # no backward pass: all start in aggregate
            else:
                assert entry["started"] > 0                  # started while the backward pass ran
        assert "second backward pass" in res["second"]


@pytest.mark.parametrize("bits", [1, 3])
def test_receiver_reconstructs_what_the_sender_kept(bits):
    """Error feedback is exact only if the decoded values are the sender's reconstruction."""
    g = torch.Generator().manual_seed(bits)
    grads = [torch.randn(64, 17, generator=g), torch.randn(9, generator=g), torch.randn(3, 4, 5, generator=g)]
    residuals = [torch.zeros_like(t) for t in grads]
    message, shapes, packed_len = encode_quantized(grads, residuals, bits)
    (decoded,) = [decode_quantized_sum([message], grads, shapes, bits, packed_len)]
    for t, res, dec in zip(grads, residuals, decoded):
        cols = t.reshape(t.shape[0], -1) if t.dim() >= 2 else t.reshape(-1, 1)
        kept = quantize_columns(cols, bits)[3].reshape(t.shape)
        assert torch.equal(dec, kept)                    # what the sender counted as sent, bit for bit
        assert torch.equal(res, t - kept)                # and the residual it keeps
    # two processes' messages sum
    twice = decode_quantized_sum([message, message], grads, shapes, bits, packed_len)
    assert all(torch.equal(a, 2 * b) for a, b in zip(twice, decoded))


def test_one_bit_indices_and_packing_are_bytes():
    v = torch.tensor([[0.5, -1.0], [-0.25, 2.0], [0.0, -3.0]])
    idx, lo, hi, recon = quantize_columns(v, 1)
    assert idx.dtype == torch.uint8 and idx.tolist() == [[1, 0], [0, 1], [1, 0]]
    assert torch.equal(dequantize_columns(idx, lo, hi, 1), recon)
    packed = _pack(idx, 1)
    assert packed.tolist() == [0b011001]                 # row-major bits 1,0,0,1,1,0, least significant first
    assert _unpack(packed, 6, 1).tolist() == [1, 0, 0, 1, 1, 0]
