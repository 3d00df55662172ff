"""A camera over the mouth of a shoe: cards sliding out, one after another.

Each card starts hidden under the shoe, slides out across the camera's region
of interest (partly under the shoe at first, then whole, then crossing the
far edge of the region), and is lifted away by the dealer; the table is empty
for a few frames before the next card. The light and the table are fixed for
the whole video, as in a studio; sensor noise, motion blur and compression
change from frame to frame.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from hardware_sim.camera import decks
from hardware_sim.camera.decks import Deck
from hardware_sim.camera.scene import FRAME_H, FRAME_W, background, place_card, split_face

SHOE_MOUTH_X = 360
ROI = (SHOE_MOUTH_X + 10, 110, 820, 500)
"""The region a technician would set for this camera: the table in front of the shoe."""


@dataclass(frozen=True)
class SlidingVideo:
    cards: tuple[str, ...]
    frames: list[np.ndarray]
    spans: list[tuple[int, int]]  # first and last frame in which each card is in view
    roi: tuple[int, int, int, int] = ROI


def _draw_shoe(frame: np.ndarray) -> None:
    """The shoe body to the left of the mouth (drawn over the card still inside it)."""
    top, bottom = 150, 590
    cv2.rectangle(frame, (0, top), (SHOE_MOUTH_X, bottom), (30, 32, 38), -1)
    cv2.rectangle(frame, (SHOE_MOUTH_X - 24, top), (SHOE_MOUTH_X, bottom), (55, 60, 70), -1)
    cv2.line(frame, (SHOE_MOUTH_X, top), (SHOE_MOUTH_X, bottom), (90, 95, 105), 2)


MCU = 16
"""A JPEG macroblock's side (4:2:0): each block is compressed on its own pixels alone,
and decoded from them and the colour at its neighbours' edges (the decoder smooths the
half-resolution colour across a block's edge)."""


def _reach(blur: int) -> int:
    """How far the blurs of :meth:`_Camera.develop` carry a pixel, with room to spare (the
    motion blur half its width, the lens blur two): beyond it a frame's change shows
    nothing."""
    return blur + 4


def _grown(box: tuple[int, int, int, int], by: int, grid: int = 1) -> tuple[int, int, int, int]:
    """``box`` (x0, y0, x1, y1) grown by ``by`` pixels each side, out to a ``grid``
    multiple, inside the frame."""
    x0, y0, x1, y1 = box
    return (
        max(0, (x0 - by) // grid * grid),
        max(0, (y0 - by) // grid * grid),
        min(FRAME_W, -(-(x1 + by) // grid) * grid),
        min(FRAME_H, -(-(y1 + by) // grid) * grid),
    )


def _cut(
    img: np.ndarray, box: tuple[int, int, int, int], at: tuple[int, int] = (0, 0)
) -> np.ndarray:
    """The ``box`` (frame coordinates) of ``img``, a part of a frame whose top left corner
    is ``at``: a view."""
    x, y = at
    return img[box[1] - y : box[3] - y, box[0] - x : box[2] - x]


class _Camera:
    """Fixed studio light and a bank of sensor-noise fields, applied to each frame.

    Drawing fresh Gaussian noise for a 1280x720 frame costs more than the rest
    of the frame; a few pre-drawn fields picked at random keep consecutive
    frames independent at a fraction of the cost.
    """

    def __init__(self, rng: np.random.Generator, banks: int = 6) -> None:
        self.rng = rng
        xs = np.linspace(-1, 1, FRAME_W, dtype=np.float32)[None, :]
        ys = np.linspace(-1, 1, FRAME_H, dtype=np.float32)[:, None]
        light = 1.0 - 0.12 * (0.6 * xs + 0.4 * ys)
        self.light = np.repeat(light[..., None], 3, axis=2)
        self.noise = [
            (rng.standard_normal((FRAME_H, FRAME_W, 3), dtype=np.float32) * 3.0).astype(np.int16)
            for _ in range(banks)
        ]

    def shoot(self, frame: np.ndarray, blur: int) -> np.ndarray:
        return self.develop(frame, blur, self.pick())

    def pick(self) -> int:
        """The noise field of the next frame (one draw of the camera's generator a frame)."""
        return int(self.rng.integers(len(self.noise)))

    def develop(self, frame: np.ndarray, blur: int, noise: int) -> np.ndarray:
        """Light, blur, the noise field ``noise`` and JPEG, on ``frame``."""
        return self._jpeg(self._expose(frame, blur, noise))

    def _expose(
        self, part: np.ndarray, blur: int, noise: int, at: tuple[int, int] = (0, 0)
    ) -> np.ndarray:
        """What the sensor records of ``part`` (a frame, or the part of one whose top left
        corner is ``at``): uneven light, motion and lens blur, noise."""
        x, y = at
        h, w = part.shape[:2]
        img = cv2.multiply(part, self.light[y : y + h, x : x + w], dtype=cv2.CV_8U)
        if blur > 1:
            img = cv2.blur(img, (blur, 1))  # motion along the slide
        img = cv2.GaussianBlur(img, (0, 0), 0.6)
        return cv2.add(img, self.noise[noise][y : y + h, x : x + w], dtype=cv2.CV_8U)

    @staticmethod
    def _jpeg(img: np.ndarray) -> np.ndarray:
        _ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 80])
        shot = cv2.imdecode(buf, cv2.IMREAD_COLOR)
        if shot is None:  # OpenCV returns None only for bad data
            raise RuntimeError("OpenCV could not decode a JPEG it had just encoded")
        return shot

    def develop_over(
        self,
        still: np.ndarray,
        frame: np.ndarray,
        changed: tuple[int, int, int, int],
        blur: int,
        noise: int,
    ) -> np.ndarray:
        """``develop(frame, blur, noise)``, pixel for pixel, where ``still`` is that of a
        frame (same blur and noise) that ``frame`` differs from only inside ``changed``
        (x0, y0, x1, y1).

        Only the blocks a card sliding past changes are developed again: a card covers a
        tenth of the frame, and developing a whole 1280x720 frame cost two thirds of
        drawing one (on a busy core a live camera drew a card's 30-odd frames slower
        than the card slides past at 50 frames a second). The blocks the change reaches
        (the blurs spread it :func:`_reach` pixels) and one block more each side (their
        edges are decoded from the colour beside them) are compressed within one block
        more again (a JPEG's own edges decode otherwise than its inside), exposed from
        :func:`_reach` pixels more (the blurs' own edges): every pixel kept is computed
        from the same pixels as in a whole frame.
        """
        reach = _reach(blur)
        paste = _grown(_grown(changed, reach, MCU), MCU)
        crop = _grown(paste, MCU)
        lit = _grown(crop, reach)
        img = self._expose(_cut(frame, lit), blur, noise, lit[:2])
        part = self._jpeg(_cut(img, crop, lit[:2]))
        shot = still.copy()
        _cut(shot, paste)[...] = _cut(part, paste, crop[:2])
        return shot


class ShoeCamera:
    """One camera over one shoe: fixed table and light, a card pass rendered on demand."""

    def __init__(
        self,
        design: Deck,
        seed: int = 0,
        table: str = "felt",
        speed: tuple[float, float] = (28.0, 40.0),
    ) -> None:
        self.design = design
        self.rng = np.random.default_rng(seed)
        self.base = background(table, self.rng)
        self.camera = _Camera(self.rng)
        self.speed = speed
        self.empty = self.base.copy()
        _draw_shoe(self.empty)
        self.empty.flags.writeable = False
        self._canvas = self.empty.copy()  # a card's frame is drawn here (card_frames)
        self._stills: dict[tuple[int, int], np.ndarray] = {}

    def _still(self, blur: int, noise: int) -> np.ndarray:
        """The empty table developed with ``blur`` and the noise field ``noise``, made once:
        each frame is then a copy of one with the card's part developed over it. At the
        default speeds, blurs 0 and 3-5 with six fields: 24 frames, 66 MB."""
        key = (blur, noise)
        if key not in self._stills:
            self._stills[key] = self.camera.develop(self.empty, blur, noise)
        return self._stills[key]

    def empty_frame(self) -> np.ndarray:
        return self._still(0, self.camera.pick()).copy()

    def card_pass(self, code: str) -> list[np.ndarray]:
        """The frames of ``code`` sliding out of the shoe and across the region."""
        return list(self.card_frames(code))

    def card_frames(self, code: str) -> Iterator[np.ndarray]:
        """:meth:`card_pass`, each frame rendered when it is asked for.

        A live camera's frame shows the card where it is when the frame is
        grabbed: rendering the whole pass first would show its first frame only
        once the last is drawn (seconds, on a loaded machine), as if the card
        had left the shoe that much later than the shoe reported it.
        """
        rng = self.rng
        face, outline = split_face(decks.face(self.design, code))
        fh, fw = face.shape[:2]
        # Landscape: the card leaves the shoe long side first, with a little twist.
        long_ = rng.uniform(270, 300)
        short = long_ * fw / fh
        cy = rng.uniform(ROI[1] + short / 2 + 25, ROI[1] + ROI[3] - short / 2 - 25)
        angle = np.deg2rad(rng.choice([90.0, -90.0]) + rng.uniform(-6, 6))
        v = rng.uniform(*self.speed)
        x = SHOE_MOUTH_X - long_ / 2  # centre: card wholly under the shoe
        w = long_
        rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        hs, hl = short / 2, long_ / 2
        corners = np.array([(-hs, -hl), (hs, -hl), (hs, hl), (-hs, hl)])  # the portrait face
        while x - w / 2 < ROI[0] + ROI[2] + 10:
            x += v
            quad = (corners @ rot.T + np.array([x, cy])).astype(np.float32)
            # Drawn on the empty table kept for it, which is put back as it was (the
            # card's box, and the shoe drawn alike) before the frame is handed over.
            frame = self._canvas
            changed = place_card(frame, face, quad, outline=outline)
            _draw_shoe(frame)
            blur, noise = int(v / 8), self.camera.pick()
            still = self._still(blur, noise)
            if changed is None:
                shot = still.copy()
            else:
                shot = self.camera.develop_over(still, frame, changed, blur, noise)
                x0, y0, x1, y1 = changed
                frame[y0:y1, x0:x1] = self.empty[y0:y1, x0:x1]
            yield shot


def sliding_cards(
    cards: list[str],
    design: Deck,
    seed: int = 0,
    table: str = "felt",
    gap: tuple[int, int] = (5, 9),
    speed: tuple[float, float] = (28.0, 40.0),
) -> SlidingVideo:
    """Render the video of ``cards`` dealt one by one out of the shoe."""
    shoe = ShoeCamera(design, seed=seed, table=table, speed=speed)
    frames: list[np.ndarray] = []
    spans: list[tuple[int, int]] = []
    for code in cards:
        first = len(frames)
        frames.extend(shoe.card_pass(code))
        spans.append((first, len(frames) - 1))
        for _ in range(int(shoe.rng.integers(gap[0], gap[1] + 1))):  # lifted away; table empty
            frames.append(shoe.empty_frame())
    return SlidingVideo(tuple(cards), frames, spans)


def write_video(frames: list[np.ndarray], path: Path, fps: float = 25.0) -> None:
    """Write frames as an MJPG ``.avi`` (or numbered images if ``path`` is a folder)."""
    if path.suffix == "":
        path.mkdir(parents=True, exist_ok=True)
        for i, frame in enumerate(frames):
            cv2.imwrite(str(path / f"frame_{i:05d}.jpg"), frame, [cv2.IMWRITE_JPEG_QUALITY, 92])
        return
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, (FRAME_W, FRAME_H))
    if not writer.isOpened():
        raise OSError(f"cannot write video {path}")
    try:
        for frame in frames:
            writer.write(frame)
    finally:
        writer.release()
