"""Tables kept in a job's folder and read a page at a time (core.tables)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.decode import NodeInfo
from core.errors import ResultFileError
from core.tables import RowFile, iter_rows, read_page, read_rows, write_rows


def _nodes(count: int) -> list[NodeInfo]:
    return [
        NodeInfo(
            index=i,
            graph="main",
            name=f"n{i}",
            op_type="Relu" if i % 2 else "Conv",
            domain="",
            inputs=[f"t{i}"],
            outputs=[f"t{i + 1}"],
            attributes={},
        )
        for i in range(count)
    ]


def test_rows_come_back_a_page_at_a_time(tmp_path: Path) -> None:
    nodes = _nodes(2_345)
    table = write_rows(tmp_path / "nodes.rows", nodes, page_rows=1_000)
    assert (table.rows, table.pages) == (2_345, 3)
    assert read_page(table, 1, NodeInfo, tmp_path) == nodes[1_000:2_000]
    assert read_page(table, 2, NodeInfo, tmp_path) == nodes[2_000:]
    assert read_page(table, 3, NodeInfo, tmp_path) == []
    assert list(iter_rows(table, NodeInfo, tmp_path)) == nodes
    picked = [0, 999, 1_000, 2_344]
    assert read_rows(table, picked, NodeInfo, tmp_path) == [nodes[i] for i in picked]


def test_an_empty_table_has_no_pages(tmp_path: Path) -> None:
    table = write_rows(tmp_path / "none.rows", [])
    assert table.pages == 0 and list(iter_rows(table, NodeInfo, tmp_path)) == []


def test_a_table_outside_its_folder_is_not_read(tmp_path: Path) -> None:
    """A result comes from a worker that read an untrusted model: the file it names must lie in the folder the
    server gave it, and a link planted there is not followed."""
    (tmp_path / "mine").mkdir()
    table = write_rows(tmp_path / "other.rows", _nodes(3))
    with pytest.raises(ResultFileError, match="outside its folder"):
        read_page(table, 0, NodeInfo, tmp_path / "mine")
    os.symlink(tmp_path / "other.rows", tmp_path / "mine" / "link.rows")
    linked = RowFile(
        path=str(tmp_path / "mine" / "link.rows"), rows=3, page_rows=table.page_rows, offsets=table.offsets
    )
    with pytest.raises(ResultFileError):
        read_page(linked, 0, NodeInfo, tmp_path / "mine")


def test_a_table_that_is_not_what_its_result_says_is_a_message(tmp_path: Path) -> None:
    table = write_rows(tmp_path / "nodes.rows", _nodes(3))
    with pytest.raises(ResultFileError, match="could not be read"):
        read_page(table, 0, RowFile, tmp_path)  # rows of another type
    broken = RowFile(path=table.path, rows=3, page_rows=table.page_rows, offsets=[table.offsets[1], 0])
    with pytest.raises(ResultFileError, match="broken index"):
        read_page(broken, 0, NodeInfo, tmp_path)
    huge = RowFile(path=table.path, rows=3, page_rows=table.page_rows, offsets=[0, 2**40])
    with pytest.raises(ResultFileError, match="more than a page may be"):
        read_page(huge, 0, NodeInfo, tmp_path)
    (tmp_path / "nodes.rows").unlink()
    with pytest.raises(ResultFileError, match="is gone"):
        read_page(table, 0, NodeInfo, tmp_path)


def test_decode_and_partition_keep_their_node_tables_in_the_job_folder(tmp_path: Path) -> None:
    from core.decode import DecodeRequest, decode_model
    from core.partition import PartitionRequest, partition_model
    from core.runtime.placement import NodePlacement
    from tests import builders

    path = builders.write(builders.chain_model(2_500), tmp_path / "chain.onnx")
    kept = decode_model(DecodeRequest(path=str(path), with_text=False))
    decoded = decode_model(DecodeRequest(path=str(path), with_text=False, out_dir=str(tmp_path / "decode")))
    assert decoded.nodes == [] and decoded.node_rows is not None
    assert decoded.node_rows.rows == decoded.total_node_count == len(kept.nodes) == 2_500
    assert list(iter_rows(decoded.node_rows, NodeInfo, tmp_path / "decode")) == kept.nodes
    assert decoded.op_types == sorted({n.op_type for n in kept.nodes})

    whole = partition_model(PartitionRequest(path=str(path), simulate=["nnapi"]))
    paged = partition_model(PartitionRequest(path=str(path), simulate=["nnapi"], out_dir=str(tmp_path / "part")))
    for full, report in zip(whole.reports, paged.reports, strict=True):
        assert report.nodes == [] and report.node_rows is not None
        assert report.node_total == report.node_rows.rows == len(full.nodes)
        assert list(iter_rows(report.node_rows, NodePlacement, tmp_path / "part")) == full.nodes
        assert len(report.main_providers) == 2_500 and set(report.node_providers) == {n.provider for n in full.nodes}
