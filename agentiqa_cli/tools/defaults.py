"""Default tool sets for `agentiqa score` (the detectors helper tunes DEFAULT_NR_TOOLS)."""

DEFAULT_FR_TOOLS: list[str] = ["psnr", "ssim", "gmsd"]
DEFAULT_NR_TOOLS: list[str] = ["piqe"]
