"""iNaturalist photo guides: research-grade, CC-licensed photos of a subject, cached in the pool.

    salon curate guides "peach hibiscus" --taxon "Hibiscus rosa-sinensis" -n 12 --pool POOL

Photos land in `POOL/guides/<subject-slug>/<photo_id>.jpg` with `index.json` beside them: a
list of the pool's `GuidePhoto` records (photo id, observation url, photo url, license,
attribution, file). Every request, API and
photo alike, goes through one pyinaturalist `ClientSession`: rate-limited to 60 requests a
minute, a User-Agent naming salon, responses and photos cached under `POOL/guides/.cache`.
Licenses are checked per photo, not only by the API filter: an observation that matches
`photo_license` can still carry other photos under licenses we may not use.
"""

from __future__ import annotations

import io
import json
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable

from salon.curate.prompts import Subject
from salon.pool.errors import BackendError, ConfigError, SetupError
from salon.pool.models import GuidePhoto

DEFAULT_LICENSES = ("CC0", "CC-BY", "CC-BY-SA")
# pyinaturalist's own spelling: upper case; the API itself returns lower case ("cc-by").
KNOWN_LICENSES = ("CC0", "CC-BY", "CC-BY-SA", "CC-BY-NC", "CC-BY-ND", "CC-BY-NC-SA", "CC-BY-NC-ND")
USER_AGENT = "salon-curate/0.1 (+https://github.com/salon-paint/salon)"


@dataclass
class GuideConfig:
    licenses: tuple[str, ...] = DEFAULT_LICENSES
    size: str = "large"            # medium (500 px) or large (1024 px)
    per_minute: int = 60           # iNaturalist asks for at most 60 requests a minute
    per_page: int = 30
    max_pages: int = 10
    retries: int = 3               # on HTTP 429 / 5xx, after the limiter's own waiting
    backoff_s: float = 5.0

    def __post_init__(self):
        self.licenses = tuple(lic.upper() for lic in self.licenses)
        problems = [f"license {lic!r} is not one of {', '.join(KNOWN_LICENSES)}"
                    for lic in self.licenses if lic not in KNOWN_LICENSES]
        if not self.licenses:
            problems.append("licenses is empty; the default is CC0, CC-BY, CC-BY-SA")
        if self.size not in ("medium", "large"):
            problems.append(f"size must be medium or large, got {self.size!r}")
        if not 1 <= self.per_minute <= 60:
            problems.append(f"per_minute must be 1-60 (iNaturalist's limit), got {self.per_minute}")
        if not 1 <= self.per_page <= 200:
            problems.append(f"per_page must be 1-200, got {self.per_page}")
        if self.max_pages < 1 or self.retries < 0 or self.backoff_s < 0:
            problems.append("max_pages must be at least 1; retries and backoff_s 0 or more")
        if problems:
            raise ConfigError(problems, where="guide config")


@dataclass
class GuideReport:
    kept: list[GuidePhoto] = field(default_factory=list)
    already: int = 0               # photos the index held before this run
    wrong_license: int = 0
    download_failed: list[str] = field(default_factory=list)
    pages: int = 0


def guides_dir(pool_dir: str | Path, subject: Subject | str) -> Path:
    slug = subject.slug if isinstance(subject, Subject) else Subject(subject, subject).slug
    return Path(pool_dir) / "guides" / slug


def load_guides(pool_dir: str | Path, subject: Subject | str) -> list[GuidePhoto]:
    index = guides_dir(pool_dir, subject) / "index.json"
    if not index.exists():
        return []
    known = {f.name for f in fields(GuidePhoto)}
    # Indexes written before the pool's GuidePhoto was the one type named the id `photo_id` and
    # also held observation_id, subject and taxon, which the observation url and folder repeat.
    rows = ({"id": row.get("photo_id")} | row for row in json.loads(index.read_text("utf-8")))
    return [GuidePhoto(**{k: v for k, v in row.items() if k in known}) for row in rows]


def make_session(cache_dir: Path, config: GuideConfig, **overrides):
    """The one rate-limited, caching session every guide request goes through."""
    try:
        from pyinaturalist import ClientSession
    except ImportError as e:
        raise SetupError("guides need pyinaturalist: pip install 'salon[curate]'") from e
    cache_dir.mkdir(parents=True, exist_ok=True)
    kwargs = dict(cache_file=str(cache_dir / "api.sqlite"), per_minute=config.per_minute,
                  ratelimit_path=str(cache_dir / "ratelimit.sqlite"),
                  lock_path=str(cache_dir / "ratelimit.lock"), user_agent=USER_AGENT)
    return ClientSession(**(kwargs | overrides))


def fetch_guides(pool_dir: str | Path, subject: Subject, taxon: str | int, n: int,
                 config: GuideConfig | None = None, session=None,
                 sleep: Callable[[float], None] = time.sleep) -> GuideReport:
    """Add photos to the subject's guide index until it holds `n` (or the taxon runs out)."""
    from pyinaturalist import get_observations

    config = config or GuideConfig()
    pool_dir, folder = Path(pool_dir), guides_dir(pool_dir, subject)
    folder.mkdir(parents=True, exist_ok=True)
    session = session or make_session(Path(pool_dir) / "guides" / ".cache", config)
    report = GuideReport()
    photos = load_guides(pool_dir, subject)
    report.already = len(photos)
    seen = {p.id for p in photos}
    params = {"quality_grade": "research", "photos": True, "photo_license": list(config.licenses),
              "per_page": config.per_page, "order_by": "votes", "session": session}
    params["taxon_id" if str(taxon).isdigit() else "taxon_name"] = taxon
    for page in range(1, config.max_pages + 1):
        if len(photos) >= n:
            break
        response = _with_retries(lambda: get_observations(page=page, **params), config, sleep)
        report.pages += 1
        results = response.get("results", [])
        for obs in results:
            if len(photos) >= n:
                break
            photo = _first_usable(obs, config, report, seen)
            if photo is None:
                continue
            guide = _download(session, photo, obs, pool_dir, folder, config, report, sleep)
            if guide is not None:
                photos.append(guide)
                report.kept.append(guide)
                seen.add(guide.id)
                _write_index(folder, photos)  # after every photo: an interrupted fetch keeps them
        if not results or page * config.per_page >= response.get("total_results", 0):
            break
    return report


def _first_usable(obs: dict, config: GuideConfig, report: GuideReport, seen: set) -> dict | None:
    """The observation's first photo under an allowed license that we do not have yet."""
    if obs.get("quality_grade") != "research":
        return None
    for photo in obs.get("photos") or []:
        license_code = (photo.get("license_code") or "").upper()
        if license_code not in config.licenses:
            report.wrong_license += 1
            continue
        if str(photo.get("id")) in seen or not photo.get("url"):
            continue
        return photo
    return None


def _download(session, photo: dict, obs: dict, pool_dir: Path, folder: Path, config: GuideConfig,
              report: GuideReport, sleep) -> GuidePhoto | None:
    from PIL import Image

    # API urls point at the square thumbnail; every size shares the path, only the name differs.
    url = photo["url"].replace("/square.", f"/{config.size}.")
    try:
        response = _with_retries(lambda: session.get(url, timeout=60), config, sleep)
        Image.open(io.BytesIO(response.content)).verify()  # an HTML error page is not a photo
    except (BackendError, OSError, ValueError) as e:
        report.download_failed.append(f"photo {photo.get('id')}: {e}")
        return None
    path = folder / f"{photo['id']}.jpg"
    path.write_bytes(response.content)
    license_code = photo["license_code"].upper()
    return GuidePhoto(
        id=str(photo["id"]), observation_url=obs.get("uri") or f"https://www.inaturalist.org/observations/{obs['id']}",
        photo_url=url, license=license_code,
        attribution=photo.get("attribution") or f"iNaturalist photo {photo['id']} ({license_code})",
        file=str(path.relative_to(pool_dir)))


def _with_retries(request, config: GuideConfig, sleep):
    """Run `request`; on HTTP 429 or 5xx wait (Retry-After when given) and try again."""
    import requests

    attempt = 0
    while True:
        try:
            response = request()
            if not isinstance(response, dict):  # API helpers return parsed JSON, sessions not
                response.raise_for_status()
            return response
        except requests.HTTPError as e:
            status = e.response.status_code if e.response is not None else 0
            if status != 429 and status < 500 or attempt == config.retries:
                raise BackendError(f"iNaturalist answered HTTP {status} for {e.request.url}"
                                   f"{'; try again later' if status == 429 else ''}") from e
            retry_after = e.response.headers.get("Retry-After", "")
            sleep(float(retry_after) if retry_after.isdigit()
                  else config.backoff_s * 2 ** attempt)
        except requests.RequestException as e:
            if attempt == config.retries:
                raise BackendError(f"cannot reach iNaturalist: {e}; check the network") from e
            sleep(config.backoff_s * 2 ** attempt)
        attempt += 1


def _write_index(folder: Path, photos: list[GuidePhoto]) -> None:
    tmp = folder / "index.json.tmp"
    tmp.write_text(json.dumps([asdict(p) for p in photos], indent=1), "utf-8")
    os.replace(tmp, folder / "index.json")
