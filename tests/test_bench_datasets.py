"""Each dataset layout parses from a tiny fixture written in its real on-disk form."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PIL import Image

from agentiqa_cli.bench.datasets import detect_layout, load_dataset
from agentiqa_cli.errors import ConfigError


def img(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = {".jpg": "JPEG", ".bmp": "BMP"}.get(path.suffix.lower(), "PNG")
    Image.new("RGB", (16, 16), (120, 60, 30)).save(path, format=fmt)
    return path


def test_generic_csv_relative_paths_and_optional_columns(tmp_path: Path) -> None:
    img(tmp_path / "d" / "a.png")
    img(tmp_path / "d" / "b.png")
    img(tmp_path / "refs" / "a.png")
    (tmp_path / "labels.csv").write_text(
        "image,mos,reference,distortion\nd/a.png,3.5,refs/a.png,blur\nd/b.png,2,,\n"
    )
    ds = load_dataset(tmp_path / "labels.csv")
    assert ds.layout == "csv" and ds.mos_range is None
    a, b = ds.items
    assert (a.image, a.mos, a.reference, a.distortion) == (
        tmp_path / "d/a.png", 3.5, tmp_path / "refs/a.png", "blur",
    )  # fmt: skip
    assert (b.image, b.mos, b.reference, b.distortion) == (tmp_path / "d/b.png", 2.0, None, None)
    # the folder alone is enough when it holds one such CSV
    assert load_dataset(tmp_path).source == tmp_path / "labels.csv"


def test_generic_csv_bad_mos_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_text("image,mos\na.png,3\nb.png,good\n")
    with pytest.raises(ConfigError, match=r"x\.csv:3: mos 'good' is not a number"):
        load_dataset(tmp_path / "x.csv")


# each layout in its real on-disk form: (folder, score file, its text, MOS range, and the rows
# read: image, reference, MOS, distortion); the images and references named are written
LAYOUTS = {
    "kadid10k": (
        "kadid10k",
        "dmos.csv",
        "dist_img,ref_img,dmos,var\nI01_01_05.png,I01.png,1.6,0.8\nI02_25_01.png,I02.png,4.57,0.3\n",
        (1.0, 5.0),
        [
            ("images/I01_01_05.png", "images/I01.png", 1.6, "gaussian_blur"),
            ("images/I02_25_01.png", "images/I02.png", 4.57, "contrast_change"),
        ],
    ),
    # the list's names are lower-case; on disk I25_24_5.BMP and I01.BMP are upper-case
    "tid2013": (
        "tid2013",
        "mos_with_names.txt",
        "5.51429 i01_01_1.bmp\n3.2 i25_24_5.bmp\n",
        (0.0, 9.0),
        [
            (
                "distorted_images/i01_01_1.bmp",
                "reference_images/I01.BMP",
                5.51429,
                "additive_gaussian_noise",
            ),
            (
                "distorted_images/I25_24_5.BMP",
                "reference_images/i25.bmp",
                3.2,
                "sparse_sampling_reconstruction",
            ),
        ],
    ),
    "koniq10k": (
        "koniq10k",
        "koniq10k_scores_and_distributions.csv",
        "image_name,c1,c2,c3,c4,c5,c_total,MOS,SD,MOS_zscore\n"
        "826373.jpg,0,1,40,60,3,104,3.62,0.65,68.2\n",
        (1.0, 5.0),
        [("512x384/826373.jpg", None, 3.62, None)],
    ),
    # SPAQ's sheet exported as CSV, under Annotations/, its images in TestImage/
    "spaq": (
        "SPAQ",
        "Annotations/MOS and Image attribute scores.csv",
        "Image name,MOS,Brightness,Colorfulness,Contrast,Noisiness,Sharpness\n"
        "00001.jpg,42.1,40,50,45,30,44\n00002.jpg,77,70,71,72,73,74\n",
        (0.0, 100.0),
        [("TestImage/00001.jpg", None, 42.1, None), ("TestImage/00002.jpg", None, 77.0, None)],
    ),
    # the image folder is found beside data.csv
    "agiqa3k": (
        "AGIQA-3K",
        "data.csv",
        "name,prompt,adj1,adj2,style,mos_quality,std_quality,mos_align,std_align\n"
        "AttnGAN_normal_000.jpg,a cat,,,,1.2,0.5,2.0,0.4\n",
        (0.0, 5.0),
        [("Images/AttnGAN_normal_000.jpg", None, 1.2, None)],
    ),
    # image numbers in the CSV, the images in a subfolder
    "bid": (
        "BID",
        "DatabaseGrades.csv",
        "Image Number,Average Subjective Score\n1,3.5\n12,0.8\n",
        (0.0, 5.0),
        [
            ("ImageDatabase/DatabaseImage0001.JPG", None, 3.5, None),
            ("ImageDatabase/DatabaseImage0012.JPG", None, 0.8, None),
        ],
    ),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_layout_reads_its_rows(tmp_path: Path, layout: str) -> None:
    folder, score_file, text, mos_range, rows = LAYOUTS[layout]
    root = tmp_path / folder
    for image, reference, _, _ in rows:
        img(root / image)
        if reference is not None:
            img(root / reference)
    (root / score_file).parent.mkdir(parents=True, exist_ok=True)
    (root / score_file).write_text(text)
    ds = load_dataset(root)
    assert ds.layout == layout and ds.root == root and ds.mos_range == mos_range
    assert [(i.image, i.reference, i.mos, i.distortion) for i in ds.items] == [
        (root / image, root / reference if reference else None, mos, distortion)
        for image, reference, mos, distortion in rows
    ]


def _spaq_xlsx(root: Path) -> Path:
    openpyxl = pytest.importorskip("openpyxl")
    img(root / "TestImage" / "00001.jpg")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["Image name", "MOS", "Brightness"])
    ws.append(["00001.jpg", 55.5, 50])
    path = root / "Annotations" / "MOS and Image attribute scores.xlsx"
    path.parent.mkdir(parents=True)
    wb.save(path)
    return path


def test_spaq_xlsx_with_openpyxl(tmp_path: Path) -> None:
    path = _spaq_xlsx(tmp_path)
    ds = load_dataset(path)
    assert [(i.image.name, i.mos) for i in ds.items] == [("00001.jpg", 55.5)]


def test_xlsx_without_openpyxl_says_export_csv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "Annotations" / "MOS and Image attribute scores.xlsx"
    path.parent.mkdir()
    path.write_bytes(b"PK\x03\x04 not really a workbook")
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # import now fails
    with pytest.raises(ConfigError, match=r"openpyxl.*export the sheet as CSV"):
        load_dataset(path, layout="spaq")


def test_detection_and_layout_errors(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(ConfigError, match="no known score file"):
        load_dataset(tmp_path)
    with pytest.raises(ConfigError, match="did you mean kadid"):
        load_dataset(tmp_path, layout="kadidd")
    with pytest.raises(ConfigError, match=r"no dmos\.csv"):
        load_dataset(tmp_path, layout="kadid")
    (tmp_path / "odd.csv").write_text("file,score\na.png,3\n")
    with pytest.raises(ConfigError, match="unknown layout"):
        load_dataset(tmp_path / "odd.csv")
    # a dmos.csv without KADID's columns is not taken for KADID
    (tmp_path / "dmos.csv").write_text("image,mos\na.png,3\n")
    assert detect_layout(tmp_path / "dmos.csv")[0] == "csv"


def test_sample_limit_and_missing_files(tmp_path: Path) -> None:
    rows = ["image,mos"]
    for k in range(20):
        img(tmp_path / f"i{k:02d}.png")
        rows.append(f"i{k:02d}.png,{k}")
    rows.append("gone.png,1")
    (tmp_path / "all.csv").write_text("\n".join(rows) + "\n")
    full = load_dataset(tmp_path / "all.csv")
    assert len(full.items) == 21 and any("1 image files missing" in n for n in full.notes)
    s1 = load_dataset(tmp_path / "all.csv", sample=5, seed=3)
    s2 = load_dataset(tmp_path / "all.csv", sample=5, seed=3)
    s3 = load_dataset(tmp_path / "all.csv", sample=5, seed=4)
    assert [i.image for i in s1.items] == [i.image for i in s2.items]
    assert [i.image for i in s1.items] != [i.image for i in s3.items]
    order = [i.image for i in full.items]
    positions = [order.index(i.image) for i in s1.items]
    assert len(positions) == 5 and positions == sorted(positions)  # file order kept
    assert [i.mos for i in load_dataset(tmp_path / "all.csv", limit=3).items] == [0, 1, 2]
    (tmp_path / "none.csv").write_text("image,mos\nx.png,1\ny.png,2\n")
    with pytest.raises(ConfigError, match="none of the 2 images exist"):
        load_dataset(tmp_path / "none.csv")


def test_bid_xlsx_numbers_stored_as_floats(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    img(tmp_path / "DatabaseImage0007.JPG")
    wb = openpyxl.Workbook()
    wb.active.append(["Image Number", "Average Subjective Score"])
    wb.active.append([7.0, 4.25])
    wb.save(tmp_path / "DatabaseGrades.xlsx")
    (item,) = load_dataset(tmp_path).items
    assert (item.image, item.mos) == (tmp_path / "DatabaseImage0007.JPG", 4.25)
