"""iNaturalist guides through the real pyinaturalist session, with requests-mock answering in
the API's real response shape (tests/fixtures/inat): license filtering, pagination, rate
limiting, a failed photo download, caching and resumption."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
import requests_mock
from pyrate_limiter import MemoryListBucket

from salon.curate.guides import GuideConfig, fetch_guides, load_guides, make_session
from salon.curate.prompts import Subject
from salon.pool import Candidate, GuidePhoto, Pool
from salon.pool.errors import BackendError, ConfigError

FIXTURES = Path(__file__).parent / "fixtures" / "inat"
API = re.compile(r"https://api\.inaturalist\.org/v1/observations")
PHOTOS = re.compile(r"https://inaturalist-open-data\.s3\.amazonaws\.com/photos/(\d+)/large\.jpg")
SUBJECT = Subject("peach hibiscus", "a peach hibiscus", "Hibiscus rosa-sinensis")


def _page(n: int) -> dict:
    return json.loads((FIXTURES / f"observations_page{n}.json").read_text())


def _jpeg() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (230, 140, 110)).save(buf, "JPEG")
    return buf.getvalue()


def _session(tmp_path: Path, config: GuideConfig):
    # In-memory limiter bucket: the persistent SQLite one would carry state between tests.
    return make_session(tmp_path / "cache", config, bucket_class=MemoryListBucket,
                        ratelimit_path=None, per_second=10, burst=1)


def _api(mock: requests_mock.Mocker, pages: dict[int, list[dict]]):
    def answer(request, context):
        responses = pages[int(request.qs["page"][0])]
        status, body = responses.pop(0) if len(responses) > 1 else responses[0]
        context.status_code = status
        if status == 429:
            context.headers["Retry-After"] = "7"
        return body

    mock.get(API, json=answer)


def test_license_filtering_and_pagination(tmp_path):
    config = GuideConfig(per_page=3)
    sleeps = []
    with requests_mock.Mocker() as mock:
        _api(mock, {1: [(200, _page(1))], 2: [(200, _page(2))]})
        mock.get(PHOTOS, content=_jpeg())
        report = fetch_guides(tmp_path, SUBJECT, "Hibiscus rosa-sinensis", 10, config,
                              session=_session(tmp_path, config), sleep=sleeps.append)
        api_calls = [r for r in mock.request_history if API.match(r.url)]
    assert [p.id for p in report.kept] == ["510001", "510004", "510005"]
    assert report.wrong_license == 3 and report.pages == 2 and not report.download_failed
    first = api_calls[0].qs  # requests-mock lower-cases query values
    assert first["photo_license"] == ["cc0,cc-by,cc-by-sa"]
    assert first["quality_grade"] == ["research"] and first["photos"] == ["true"]
    assert first["taxon_name"] == ["hibiscus rosa-sinensis"]
    assert [r.qs["page"] for r in api_calls] == [["1"], ["2"]]
    assert "salon" in api_calls[0].headers["User-Agent"]
    stored = load_guides(tmp_path, SUBJECT)
    assert stored == report.kept
    cc0 = stored[1]
    assert (cc0.license, cc0.observation_url) == ("CC0", "https://www.inaturalist.org/observations/9100003")
    assert cc0.attribution == "(c) kaimana, no rights reserved (CC0)"
    assert cc0.photo_url.endswith("/510004/large.jpg")
    assert (tmp_path / cc0.file).read_bytes() == _jpeg()
    assert cc0.file == "guides/peach-hibiscus/510004.jpg"
    assert sleeps == []


def test_a_fetched_guide_is_the_pools_guide_photo(tmp_path):
    """One GuidePhoto type: what guides fetch is what a candidate carries into the store."""
    config = GuideConfig(per_page=3)
    with requests_mock.Mocker() as mock:
        _api(mock, {1: [(200, _page(1))], 2: [(200, _page(2))]})
        mock.get(PHOTOS, content=_jpeg())
        guide = fetch_guides(tmp_path, SUBJECT, 53713, 1, config, session=_session(tmp_path, config)).kept[0]
    assert isinstance(guide, GuidePhoto)
    with Pool.open(tmp_path / "pool", create=True) as pool:
        pool.add_candidate(Candidate(code="brush.rect(0, 0, 9, 9);", subject=SUBJECT.name, guide=guide))
        (stored,) = pool.candidates()
    assert stored.guide == replace(guide, file=None)  # the store keeps the published fields
    assert stored.guide.free and stored.guide.id == "510001"


def test_an_index_written_before_one_type_still_loads(tmp_path):
    folder = tmp_path / "guides" / "peach-hibiscus"
    folder.mkdir(parents=True)
    (folder / "index.json").write_text(json.dumps([{
        "photo_id": 510004, "observation_id": 9100003, "observation_url": "https://x/obs/9100003",
        "photo_url": "https://x/510004/large.jpg", "license": "CC0", "attribution": "(c) kaimana",
        "file": "guides/peach-hibiscus/510004.jpg", "subject": "peach hibiscus", "taxon": "53713"}]))
    assert load_guides(tmp_path, SUBJECT) == [GuidePhoto("510004", "https://x/obs/9100003",
                                                         "https://x/510004/large.jpg", "CC0", "(c) kaimana",
                                                         "guides/peach-hibiscus/510004.jpg")]


def test_stops_at_n_and_resumes_without_refetching(tmp_path):
    config = GuideConfig(per_page=3)
    with requests_mock.Mocker() as mock:
        _api(mock, {1: [(200, _page(1))], 2: [(200, _page(2))]})
        mock.get(PHOTOS, content=_jpeg())
        session = _session(tmp_path, config)
        first = fetch_guides(tmp_path, SUBJECT, 53713, 2, config, session=session)
        assert [p.id for p in first.kept] == ["510001", "510004"]
        assert mock.request_history[0].qs["taxon_id"] == ["53713"]
        photo_calls = sum(1 for r in mock.request_history if PHOTOS.match(r.url))
        second = fetch_guides(tmp_path, SUBJECT, 53713, 3, config, session=session)
        photo_calls_after = sum(1 for r in mock.request_history if PHOTOS.match(r.url))
    assert second.already == 2 and [p.id for p in second.kept] == ["510005"]
    assert photo_calls_after - photo_calls == 1  # photos already held are not downloaded again
    assert len(load_guides(tmp_path, SUBJECT)) == 3


def test_rate_limited_answers_are_waited_out(tmp_path):
    config = GuideConfig(per_page=3, backoff_s=1.5)
    sleeps = []
    with requests_mock.Mocker() as mock:
        _api(mock, {1: [(429, {"error": "Too Many Requests"}), (200, _page(1))],
                    2: [(503, {}), (200, _page(2))]})
        mock.get(PHOTOS, content=_jpeg())
        report = fetch_guides(tmp_path, SUBJECT, "Hibiscus rosa-sinensis", 10, config,
                              session=_session(tmp_path, config), sleep=sleeps.append)
    assert len(report.kept) == 3
    assert sleeps == [7.0, 1.5]  # Retry-After when the server gives it, else backoff


def test_rate_limit_that_never_lifts_is_an_error(tmp_path):
    config = GuideConfig(retries=0)
    with requests_mock.Mocker() as mock:
        _api(mock, {1: [(429, {})]})
        with pytest.raises(BackendError, match="429.*try again later"):
            fetch_guides(tmp_path, SUBJECT, "Hibiscus rosa-sinensis", 3, config,
                         session=_session(tmp_path, config), sleep=lambda s: None)


def test_failed_photo_download_is_reported_and_skipped(tmp_path):
    config = GuideConfig(per_page=3, retries=1, backoff_s=0)
    with requests_mock.Mocker() as mock:
        _api(mock, {1: [(200, _page(1))], 2: [(200, _page(2))]})
        mock.get(PHOTOS, content=_jpeg())
        mock.get("https://inaturalist-open-data.s3.amazonaws.com/photos/510004/large.jpg",
                 status_code=404)
        mock.get("https://inaturalist-open-data.s3.amazonaws.com/photos/510005/large.jpg",
                 text="<html>AccessDenied</html>")  # 200, but not an image
        report = fetch_guides(tmp_path, SUBJECT, "Hibiscus rosa-sinensis", 10, config,
                              session=_session(tmp_path, config), sleep=lambda s: None)
    assert [p.id for p in report.kept] == ["510001"]
    assert len(report.download_failed) == 2
    assert "photo 510004" in report.download_failed[0] and "404" in report.download_failed[0]
    assert [p.id for p in load_guides(tmp_path, SUBJECT)] == ["510001"]
    assert not (tmp_path / "guides" / "peach-hibiscus" / "510005.jpg").exists()


def test_session_limits_and_identifies_itself(tmp_path):
    session = make_session(tmp_path / "cache", GuideConfig())
    assert "salon" in session.headers["User-Agent"]
    rates = {(r.limit, r.interval) for r in session.limiter._rates}
    assert (60, 60) in rates


def test_config_problems_are_reported_together():
    assert GuideConfig(licenses=("cc-by", "cc0")).licenses == ("CC-BY", "CC0")
    with pytest.raises(ConfigError) as e:
        GuideConfig(licenses=("CC-BY-XYZ",), size="huge", per_minute=100)
    assert len(e.value.problems) == 3
