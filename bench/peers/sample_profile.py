"""Four bitonic.sample calls for Nsight Compute, after one warm-up round of the same four
(f32 rows of 128,256 logits): batch 1 top-p 0.9, batch 256 top-p 0.9, 64 rows of top-k 50 +
top-p 0.9, and batch 1 min-p 0.1. On a GPU host, with the wheel installed:

    ncu --target-processes all -k regex:sample_rows --launch-skip 4 --launch-count 4 \\
        --section SpeedOfLight --section WarpStateStats --section LaunchStats \\
        --section Occupancy --section SchedulerStats python3 bench/peers/sample_profile.py
"""
import torch

import bitonic

shapes = [(1, dict(top_p=0.9)), (256, dict(top_p=0.9)), (64, dict(top_k=50, top_p=0.9)), (1, dict(min_p=0.1))]
xs = [torch.randn(b, 128256, device="cuda") * 3 for b, _ in shapes]
for _ in range(2):
    for x, (_, f) in zip(xs, shapes):
        bitonic.sample(x, **f)
torch.cuda.synchronize()
