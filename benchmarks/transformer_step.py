"""One training step of the course's transformer against the same model in PyTorch (CPU, eager).

A step is what ``rc.sft`` does per minibatch: the masked next-token loss (``rc.lm_nll``), its
gradient and an Adam update. The batch is ``B`` rows of ``C`` tokens, the first 0-4 of each row
``PAD`` (left-padded prompts), the loss over every later position. When torch is importable, the
same model is built in PyTorch from a copy of our initial weights, their losses and gradients
are checked to agree, and both steps are timed in turns in this process: PyTorch eager on one
thread (``torch.set_num_threads(1)``), its attention written out (matmul, masked_fill,
softmax, matmul) and as ``F.scaled_dot_product_attention``; ours inside
``rc.single_thread_blas()``, both after ``rc.keep_freed_memory()``, as the trainers run.
Without torch only our figures are printed.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/transformer_step.py``. Prints the median over
repeats of the milliseconds per step, by the wall clock and in CPU time of the process (the
machine's load average beside them: on a shared machine the wall clock moves by tens of
percent), and our time over PyTorch's faster variant (goal: <= 1).
"""

import os
import time

import numpy as np

import rlcourse as rc

# (V, D, H, L, C, B): the lessons' default model and the issue's 64-wide one at two batch sizes
SHAPES = [(20, 32, 4, 2, 16, 64), (20, 64, 4, 2, 16, 64), (20, 64, 4, 2, 16, 256)]
REPEATS, LR = 9, 1e-3

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # torch is not a dependency: then only our figures are printed
    torch = None


def batch_of(vocab: int, context: int, batch: int, seed: int = 0):
    """Tokens ``[B, C]`` (rows left-padded with 0-4 PAD) and the loss mask (every real token)."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(rc.EOS + 1, vocab, size=(batch, context))
    pads = rng.integers(0, 5, size=batch)
    tokens[np.arange(context)[None, :] < pads[:, None]] = rc.PAD
    return tokens, tokens != rc.PAD


def our_step(params, tokens, mask):
    """``(step(), loss, grads)``: ``step`` runs one loss-gradient-Adam step in place of ``params``."""
    opt = rc.Adam(lr=LR)
    state = {"params": params, "opt": opt.init(params)}
    value_and_grad = rc.value_and_grad(rc.lm_nll)

    def step():
        _, grads = value_and_grad(state["params"], tokens, mask)
        state["params"], state["opt"] = opt.step(state["params"], grads, state["opt"])

    loss, grads = value_and_grad(params, tokens, mask)
    return step, loss, grads


def torch_model(params, attention: str):
    """Our architecture in PyTorch, initialised with a copy of ``params``."""

    class Block(torch.nn.Module):
        def __init__(self, block, heads):
            super().__init__()
            dim = block["proj"]["w"].shape[0]
            hidden = block["mlp"]["w"].shape[1]
            self.heads = heads
            self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
            self.attn = torch.nn.Linear(dim, 3 * dim)
            self.proj = torch.nn.Linear(dim, dim)
            self.mlp = torch.nn.Linear(dim, hidden)
            self.out = torch.nn.Linear(hidden, dim)
            with torch.no_grad():
                for name in ("ln1", "ln2"):
                    getattr(self, name).weight.copy_(torch.from_numpy(block[name]["gain"]))
                    getattr(self, name).bias.copy_(torch.from_numpy(block[name]["bias"]))
                for name in ("attn", "proj", "mlp", "out"):
                    w, b = block[name]["w"], block[name]["b"]
                    getattr(self, name).weight.copy_(torch.from_numpy(w.reshape(w.shape[0], -1).T))
                    getattr(self, name).bias.copy_(torch.from_numpy(b.reshape(-1)))

        def forward(self, x, mask):
            batch, length, dim = x.shape
            qkv = self.attn(self.ln1(x)).view(batch, length, 3, self.heads, dim // self.heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            if attention == "sdpa":
                a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            else:
                scores = (q @ k.transpose(-1, -2)) * (dim // self.heads) ** -0.5
                a = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(batch, length, dim))
            return x + self.out(F.gelu(self.mlp(self.ln2(x)), approximate="tanh"))

    class Transformer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            config = rc.transformer_config(params)
            self.embed = torch.nn.Parameter(torch.from_numpy(params["embed"].copy()))
            self.position = torch.nn.Parameter(torch.from_numpy(params["position"].copy()))
            self.blocks = torch.nn.ModuleList(Block(b, config.heads) for b in params["blocks"])
            self.ln_f = torch.nn.LayerNorm(config.dim)
            self.head = torch.nn.Linear(config.dim, config.vocab, bias=False)
            with torch.no_grad():
                self.head.weight.copy_(torch.from_numpy(params["head"].T))
                self.ln_f.weight.copy_(torch.from_numpy(params["ln_f"]["gain"]))
                self.ln_f.bias.copy_(torch.from_numpy(params["ln_f"]["bias"]))

        def forward(self, tokens):
            # the same rules as ours: PAD keys hidden, positions count the real tokens
            visible = tokens != rc.PAD
            positions = torch.cumsum(visible, dim=1) - visible.long()
            length = tokens.shape[1]
            causal = torch.ones(length, length, dtype=torch.bool).tril()
            eye = torch.eye(length, dtype=torch.bool)
            mask = (causal & (visible[:, None, :] | eye))[:, None]  # [B, 1, T, T]
            x = self.embed[tokens] + self.position[positions]
            for block in self.blocks:
                x = block(x, mask)
            return self.head(self.ln_f(x))

    return Transformer()


def torch_step(params, tokens, mask, attention: str):
    model = torch_model(params, attention)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    tokens_t = torch.from_numpy(tokens)
    targets = tokens_t[:, 1:]
    counted = torch.from_numpy(mask[:, 1:])
    count = int(counted.sum())

    def loss_fn():
        logits = model(tokens_t)[:, :-1]
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                              reduction="none").view_as(targets)
        return (nll * counted).sum() / count

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        opt.step()

    loss = loss_fn()
    loss.backward()
    grads = {"embed": model.embed.grad.numpy().copy(),
             "mlp.w": model.blocks[0].mlp.weight.grad.numpy().T.copy()}
    opt.zero_grad(set_to_none=True)
    return step, float(loss.detach()), grads


def ms_per_step(step, steps: int) -> tuple[float, float]:
    """Wall-clock and CPU milliseconds per step (the CPU time of this process leaves out the
    time it waited for a core on a shared machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return ((time.perf_counter() - wall) / steps * 1e3, (time.process_time() - cpu) / steps * 1e3)


def main():
    rc.keep_freed_memory()  # as the trainers do; torch allocates through the same malloc
    if torch is not None:
        torch.set_num_threads(1)
        print(f"torch {torch.__version__}, numpy {np.__version__}, one thread each")
    else:
        print("torch is not importable: our figures only")
    header = f"{'V':>3} {'D':>3} {'H':>2} {'L':>2} {'C':>3} {'B':>4} {'clock':>5} {'ours ms':>8}"
    if torch is not None:
        header += f" {'torch ms':>9} {'torch sdpa':>10} {'ours/torch':>10}"
    print(header + f" {'load':>5}")
    for vocab, dim, heads, layers, context, batch in SHAPES:
        params = rc.transformer_init(vocab, context, dim, heads, layers, seed=0)
        tokens, mask = batch_of(vocab, context, batch)
        ours, loss, grads = our_step(params, tokens, mask)
        steps = max(3, 2000 // batch)
        runners = {"ours": ours}
        if torch is not None:
            for attention in ("manual", "sdpa"):
                step, t_loss, t_grads = torch_step(params, tokens, mask, attention)
                assert abs(t_loss - loss) < 1e-4 * abs(loss), (t_loss, loss)
                np.testing.assert_allclose(grads["embed"], t_grads["embed"], rtol=1e-3, atol=1e-5)
                np.testing.assert_allclose(grads["blocks"][0]["mlp"]["w"], t_grads["mlp.w"],
                                           rtol=1e-3, atol=1e-5)
                runners[attention] = step
        times = {name: [] for name in runners}
        with rc.single_thread_blas():
            for step in runners.values():
                step()  # warm up
            for _ in range(REPEATS):
                for name, step in runners.items():  # in turns, so a load spike hits all alike
                    times[name].append(ms_per_step(step, steps))
        for clock in (0, 1):
            med = {name: float(np.median([t[clock] for t in ts])) for name, ts in times.items()}
            row = (f"{vocab:3d} {dim:3d} {heads:2d} {layers:2d} {context:3d} {batch:4d} "
                   f"{('wall', 'cpu')[clock]:>5} {med['ours']:8.2f}")
            if torch is not None:
                best = min(med["manual"], med["sdpa"])
                row += f" {med['manual']:9.2f} {med['sdpa']:10.2f} {med['ours'] / best:10.2f}"
            print(row + f" {os.getloadavg()[0]:5.1f}")


if __name__ == "__main__":
    main()
