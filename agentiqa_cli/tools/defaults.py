"""Default tool sets for `agentiqa score` and the synthetic benchmarks.

DEFAULT_NR_TOOLS is the no-reference set whose plain mean is the fused score; it was chosen
with scripts/quality_check.py (the numbers are in that script's output): the built-in
detectors, one per distortion family, each saturating at 5 on clean photos so that a
detector that has nothing to see does not drag the mean down. PIQE is left out: it ranks
worse on the synthetic check and pyiqa ships it under a non-commercial licence.
"""

DEFAULT_FR_TOOLS: list[str] = ["psnr", "ssim", "gmsd"]
DEFAULT_NR_TOOLS: list[str] = [
    "sharpness",
    "noise",
    "blockiness",
    "pixelation",
    "underexposure",
    "overexposure",
    "contrast",
]
# every no-reference tool that runs without downloaded weights: the built-in detectors + PIQE
WEIGHT_FREE_NR: list[str] = [
    *DEFAULT_NR_TOOLS,
    "colorfulness",
    "colorcast",
    "saturation_clip",
    "piqe",
]
