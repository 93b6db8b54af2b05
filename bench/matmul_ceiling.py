"""The bf16 matmul ceiling of this GPU: plain torch.matmul 8192^3, the mean of 10 after 3 warm-ups.

The probe's GEMM figure is judged against this number measured in the same run (target >= 95%).
"""
import torch

N, WARMUP, ITERS = 8192, 3, 10


def main():
    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    for _ in range(WARMUP):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(ITERS):
        torch.matmul(a, b)
    end.record()
    end.synchronize()
    seconds = start.elapsed_time(end) / 1000 / ITERS
    print(f"matmul bf16 {N}^3: {2 * N**3 / seconds / 1e12:.1f} TFLOP/s ({torch.cuda.get_device_name()})")


if __name__ == "__main__":
    main()
