/**
 * Motion detection on small grayscale frames (the capture pipeline feeds 320x180 8-bit luma at the camera's
 * frame rate). Pure TypeScript on typed arrays: every buffer is allocated in the constructor or in
 * `configure()`, and each frame costs one pass over its pixels plus two passes over an eighth of them.
 *
 * How a frame is judged (the numbers, for the README):
 *
 * - Background: a per-pixel running average, initialised from the first frame. Its learning rate is a time
 *   constant, converted to a per-frame weight from the camera's frame rate (`1 - exp(-1 / (fps * tau))`), so the
 *   behaviour does not depend on fps. Pixels that did not change follow the image with tau = 2 s (slow light
 *   changes, shadows, noise); pixels that changed learn 10x slower, tau = 20 s, so something passing by does not
 *   burn in (a pixel covered for 1 s moves 5 % towards it) while something parked becomes background after about
 *   half a minute (a car 100 levels brighter than the road is absorbed after ~28 s at medium sensitivity).
 * - Warm-up: the first second of frames (at least 3 frames) only learns, with tau = 0.1 s for every pixel, and
 *   never reports motion, so start-up frames (grey or black frames, a decoder settling) are forgotten. While
 *   something still moves, the warm-up goes on until a frame without motion (at most 3 s): an object that
 *   leaves just after the start would otherwise stay in the background as a ghost and make motion for tens of
 *   seconds.
 * - Global lighting: auto exposure, IR switching and lights change the whole image at once. Before thresholding,
 *   the frame is compared with `gain * background + offset`, fitted on the watched area: the median of
 *   `frame - background` picks the pixels that follow the global change (within 32 levels of the median), and a
 *   least-squares line through those gives gain and offset (offset only when the area is too flat to measure a
 *   gain, or the gain falls outside 0.2..5). A moving object covering less than half the area does not move the
 *   median, so it is not compensated away. When a change is not of that form (more than 85 % of the watched
 *   pixels differ from the background, counted on the fit's samples, and more than half still differ after
 *   compensation, e.g. a night-vision switch or a scene-wide glare), the frame is a lighting change, not motion:
 *   the background is re-learned from it with a fresh warm-up.
 * - Noise: a pixel changed when `|frame - (gain * background + offset)| > pixelDelta`. Changes count on 4x4
 *   blocks: a block counts only when at least 4 of its 16 pixels changed (a quarter of its watched pixels, at
 *   least 2, where a zone cuts it), so isolated pixels (sensor noise, compression speckles) never add up to
 *   motion. `changedFraction` = changed pixels in counting blocks / watched pixels.
 * - Sensitivity (`SENSITIVITY_THRESHOLDS`): high 15 levels / 0.2 % of the watched area (115 px of 320x180, an
 *   11x11 px object), medium 25 / 0.5 % (17x17 px), low 40 / 1.5 % (29x29 px). Downscaling to 320x180 averages
 *   away most sensor noise; what remains (compression, night-time gain) is a few levels, so 15 is ~3-4 sigma of a
 *   noisy night image, 25 ignores low-contrast flicker (leaves, rain) and 40 reacts to strong contrast only.
 *   A frame is `motion` when `changedFraction >= minArea` (never during warm-up or a lighting change).
 * - Episodes: one starts after 2 consecutive motion frames (a single-frame glitch is ignored) and ends after
 *   2 s without a motion frame. The starting frame carries the `event`, unless the previous event was less than
 *   `cooldownSeconds` ago (0: every episode has its event). An episode never has a second event.
 * - Confidence (`motionConfidence`): 50 at the minimum area, rising with the logarithm of the area to 100 at 20 %
 *   of the watched area (medium: 0.5 % -> 50, 1 % -> 59, 3 % -> 74, 10 % -> 91); below the minimum area it falls
 *   linearly to 1. Integer 1..100, non-decreasing in the area.
 * - Zones: the watched pixels are the union of the enabled zones' polygons (pixel centres inside, even-odd rule),
 *   rasterised when the settings change; no enabled zone watches the whole frame.
 *
 * Time comes from the frames' timestamps; a timestamp that goes backwards (a restarted stream clock) counts as no
 * time passing, so cooldowns and episodes never stall.
 */
import type { DetectionZone, MotionSensitivity } from '../entities/camera.entity';

export interface MotionSettings {
  sensitivity: MotionSensitivity;
  zones: DetectionZone[];
  /** 0..3600: minimum time between two motion events. */
  cooldownSeconds: number;
  /** 1..30, makes the time constants independent of the frame rate. */
  frameRate: number;
}

export interface MotionEvent {
  /** Integer 1..100, see `motionConfidence`. */
  confidence: number;
  changedFraction: number;
}

export interface MotionObservation {
  /** Fraction (0..1) of the watched pixels that changed in this frame (isolated changes excluded). */
  changedFraction: number;
  /** This frame counts as motion (at least the minimum area; never during warm-up or a lighting change). */
  motion: boolean;
  /** A motion episode is in progress. */
  inEpisode: boolean;
  /** Set on the frame that starts an episode, unless the cooldown since the previous event has not passed. */
  event: MotionEvent | null;
}

export const SENSITIVITY_THRESHOLDS: Readonly<
  Record<MotionSensitivity, Readonly<{ pixelDelta: number; minArea: number }>>
> = Object.freeze({
  high: Object.freeze({ pixelDelta: 15, minArea: 0.002 }),
  medium: Object.freeze({ pixelDelta: 25, minArea: 0.005 }),
  low: Object.freeze({ pixelDelta: 40, minArea: 0.015 }),
});

/** Time constant of pixels without motion. */
export const BACKGROUND_TIME_CONSTANT_SECONDS = 2;
/** Time constant of pixels with motion: 10x slower, so passing objects do not burn in. */
export const MOTION_TIME_CONSTANT_SECONDS = 20;
export const WARMUP_SECONDS = 1;
export const WARMUP_MIN_FRAMES = 3;
/** Longest warm-up while something keeps moving. */
export const WARMUP_MAX_SECONDS = 3;
const WARMUP_TIME_CONSTANT_SECONDS = 0.1;
export const EPISODE_START_FRAMES = 2;
export const EPISODE_END_MS = 2000;
/** More than this fraction of the watched pixels differ from the background: maybe a lighting change... */
export const LIGHTING_CHANGE_FRACTION = 0.85;
/** ...which compensation did not explain when more than this fraction still differs after it. */
export const LIGHTING_UNEXPLAINED_FRACTION = 0.5;
/** Changed fraction with confidence 100. */
export const FULL_CONFIDENCE_FRACTION = 0.2;

/** Blocks of 4x4 pixels (1 << 2). */
const BLOCK_SHIFT = 2;
const BLOCK_PIXELS = 1 << (2 * BLOCK_SHIFT);
/** Never reached by a block count: marks blocks with too few watched pixels to judge. */
const BLOCK_IGNORED = 255;
/** Pixels within this many levels of the median difference take part in the gain/offset fit. */
const FIT_TOLERANCE = 32;
/** Below this variance (8 levels standard deviation) the area is too flat to measure a gain. */
const MIN_FIT_VARIANCE = 64;
const MIN_GAIN = 0.2;
const MAX_GAIN = 5;
/** Below this many watched pixels on the sampling grid, the fit samples every watched pixel. */
const MIN_SAMPLES = 256;

/**
 * Confidence of a motion covering `changedFraction` of the watched area: 50 at `minArea`, 100 at
 * `FULL_CONFIDENCE_FRACTION` (20 %) and above, logarithmic in between; below `minArea` linear down to 1.
 */
export function motionConfidence(changedFraction: number, minArea: number): number {
  if (!(changedFraction > 0)) return 1;
  if (changedFraction >= FULL_CONFIDENCE_FRACTION) return 100;
  if (changedFraction < minArea)
    return Math.max(1, Math.min(50, Math.round((50 * changedFraction) / minArea)));
  const span = Math.log(FULL_CONFIDENCE_FRACTION / minArea);
  const score = 50 + (50 * Math.log(changedFraction / minArea)) / span;
  return Math.max(50, Math.min(100, Math.round(score)));
}

/**
 * The watched pixels: 1 where a pixel's centre lies inside an enabled zone's polygon (even-odd rule, 0..1
 * coordinates with 0,0 at the top left), else 0. `null` when no zone is enabled: the whole frame is watched.
 * Enabled zones that cover no pixel centre give an all-zero mask (nothing is watched).
 */
export function zoneMask(width: number, height: number, zones: DetectionZone[]): Uint8Array | null {
  assertDimensions(width, height);
  const enabled = zones.filter((zone) => zone.enabled);
  if (enabled.length === 0) return null;
  const mask = new Uint8Array(width * height);
  for (const zone of enabled) fillPolygon(mask, width, height, zone.points);
  return mask;
}

/** Scanline fill: on each row, the pixels whose centre has an odd number of polygon edges to its right. */
function fillPolygon(mask: Uint8Array, width: number, height: number, points: [number, number][]): void {
  const count = points.length;
  if (count < 3) return;
  const crossings: number[] = [];
  for (let y = 0; y < height; y++) {
    const py = (y + 0.5) / height;
    crossings.length = 0;
    for (let k = 0, j = count - 1; k < count; j = k++) {
      const [xk, yk] = points[k];
      const [xj, yj] = points[j];
      if (yk > py !== yj > py) crossings.push(xk + ((py - yk) * (xj - xk)) / (yj - yk));
    }
    crossings.sort((a, b) => a - b);
    // A centre px is inside when crossings[2n] <= px < crossings[2n + 1], i.e. x from ceil(c * width - 0.5).
    for (let k = 0; k + 1 < crossings.length; k += 2) {
      const from = Math.max(0, Math.ceil(crossings[k] * width - 0.5));
      const to = Math.min(width, Math.ceil(crossings[k + 1] * width - 0.5));
      if (from < to) mask.fill(1, y * width + from, y * width + to);
    }
  }
}

function assertDimensions(width: number, height: number): void {
  if (!Number.isSafeInteger(width) || !Number.isSafeInteger(height) || width < 1 || height < 1) {
    throw new RangeError(`frame size must be positive integers, got ${width}x${height}`);
  }
}

function assertSettings(settings: MotionSettings): void {
  if (!Object.hasOwn(SENSITIVITY_THRESHOLDS, settings.sensitivity)) {
    throw new RangeError(`unknown motion sensitivity ${String(settings.sensitivity)}`);
  }
  if (!Number.isFinite(settings.frameRate) || settings.frameRate <= 0) {
    throw new RangeError(`frame rate must be a positive number, got ${settings.frameRate}`);
  }
  if (!Number.isFinite(settings.cooldownSeconds) || settings.cooldownSeconds < 0) {
    throw new RangeError(`cooldown must be zero or more seconds, got ${settings.cooldownSeconds}`);
  }
}

/** Per-frame weight of a running average with time constant `seconds` at `frameRate` frames per second. */
function frameWeight(seconds: number, frameRate: number): number {
  return 1 - Math.exp(-1 / (frameRate * seconds));
}

export class MotionDetector {
  private readonly pixelCount: number;
  private readonly blocksPerRow: number;
  private readonly background: Float32Array;
  /** 1 for watched pixels (all ones without an enabled zone), so the hot loop needs no branch on zones. */
  private readonly watched: Uint8Array;
  private readonly blockChanged: Uint8Array;
  private readonly blockMinimum: Uint8Array;
  /** Histogram of frame - background over the fit samples, offset by 255. */
  private readonly histogram = new Int32Array(511);
  private samples = new Uint32Array(0);
  private watchedCount = 0;

  private pixelDelta = 0;
  private minArea = 1;
  private cooldownMs = 0;
  private stillWeight = 0;
  private motionWeight = 0;
  private warmupWeight = 0;
  private warmupFrames = WARMUP_MIN_FRAMES;
  private maxWarmupFrames = WARMUP_MIN_FRAMES;

  private hasBackground = false;
  private warmedUp = false;
  private learnedFrames = 0;
  private gain = 1;
  private offset = 0;
  /** Watched pixels that differ from the compensated background in the last frame. */
  private changedPixels = 0;
  /** Fraction of the fit samples that differ from the uncompensated background in the last frame. */
  private shiftedFraction = 0;

  /** Milliseconds of stream time: the sum of the forward steps between frame timestamps. */
  private clock = 0;
  private lastTimestamp: number | null = null;
  private consecutiveMotion = 0;
  private inEpisode = false;
  private lastMotionAt = 0;
  private lastEventAt: number | null = null;

  constructor(
    private readonly width: number,
    private readonly height: number,
    settings: MotionSettings,
  ) {
    assertDimensions(width, height);
    this.pixelCount = width * height;
    this.background = new Float32Array(this.pixelCount);
    this.watched = new Uint8Array(this.pixelCount);
    this.blocksPerRow = Math.ceil(width / (1 << BLOCK_SHIFT));
    const blocks = this.blocksPerRow * Math.ceil(height / (1 << BLOCK_SHIFT));
    this.blockChanged = new Uint8Array(blocks);
    this.blockMinimum = new Uint8Array(blocks);
    this.configure(settings);
  }

  /** Applies new sensitivity, zones, cooldown or frame rate; the background, episode and cooldown carry on. */
  configure(settings: MotionSettings): void {
    assertSettings(settings);
    const { pixelDelta, minArea } = SENSITIVITY_THRESHOLDS[settings.sensitivity];
    this.pixelDelta = pixelDelta;
    this.minArea = minArea;
    this.cooldownMs = settings.cooldownSeconds * 1000;
    this.stillWeight = frameWeight(BACKGROUND_TIME_CONSTANT_SECONDS, settings.frameRate);
    this.motionWeight = frameWeight(MOTION_TIME_CONSTANT_SECONDS, settings.frameRate);
    this.warmupWeight = frameWeight(WARMUP_TIME_CONSTANT_SECONDS, settings.frameRate);
    this.warmupFrames = Math.max(WARMUP_MIN_FRAMES, Math.ceil(WARMUP_SECONDS * settings.frameRate));
    this.maxWarmupFrames = Math.max(this.warmupFrames, Math.ceil(WARMUP_MAX_SECONDS * settings.frameRate));
    this.applyZones(settings.zones);
  }

  /**
   * Forgets the background (e.g. after the stream reconnects): the next frames warm up again. An episode in
   * progress ends; the cooldown since the last event carries on.
   */
  reset(): void {
    this.hasBackground = false;
    this.consecutiveMotion = 0;
    this.inEpisode = false;
  }

  analyse(frame: Uint8Array, timestampMs: number): MotionObservation {
    if (frame.length !== this.pixelCount) {
      throw new RangeError(`frame has ${frame.length} bytes, expected ${this.width}x${this.height}`);
    }
    const now = this.advanceClock(timestampMs);
    let changedFraction = 0;
    let countsAsMotion = false;
    if (!this.hasBackground) {
      this.hasBackground = true;
      this.startWarmup(frame);
    } else {
      const warmingUp = !this.warmedUp;
      this.estimateLighting(frame);
      this.compareAndLearn(frame, warmingUp);
      changedFraction = this.watchedCount === 0 ? 0 : this.countBlockChanges() / this.watchedCount;
      if (warmingUp) {
        this.learnedFrames++;
        this.warmedUp =
          this.learnedFrames >= this.warmupFrames &&
          (changedFraction < this.minArea || this.learnedFrames >= this.maxWarmupFrames);
      } else if (
        this.shiftedFraction > LIGHTING_CHANGE_FRACTION &&
        this.changedPixels > LIGHTING_UNEXPLAINED_FRACTION * this.watchedCount
      ) {
        this.startWarmup(frame);
      } else {
        countsAsMotion = changedFraction >= this.minArea;
      }
    }
    const event = this.updateEpisode(countsAsMotion, changedFraction, now);
    return { changedFraction, motion: countsAsMotion, inEpisode: this.inEpisode, event };
  }

  /** Takes the frame as the background and learns quickly, without motion, for the next second or so. */
  private startWarmup(frame: Uint8Array): void {
    this.background.set(frame);
    this.learnedFrames = 1;
    this.warmedUp = false;
  }

  private advanceClock(timestampMs: number): number {
    if (!Number.isFinite(timestampMs))
      throw new RangeError(`frame timestamp must be finite, got ${timestampMs}`);
    if (this.lastTimestamp !== null && timestampMs > this.lastTimestamp) {
      this.clock += timestampMs - this.lastTimestamp;
    }
    this.lastTimestamp = timestampMs;
    return this.clock;
  }

  private updateEpisode(motion: boolean, changedFraction: number, now: number): MotionEvent | null {
    if (!motion) {
      this.consecutiveMotion = 0;
      if (this.inEpisode && now - this.lastMotionAt >= EPISODE_END_MS) this.inEpisode = false;
      return null;
    }
    this.consecutiveMotion++;
    this.lastMotionAt = now;
    if (this.inEpisode || this.consecutiveMotion < EPISODE_START_FRAMES) return null;
    this.inEpisode = true;
    if (this.lastEventAt !== null && now - this.lastEventAt < this.cooldownMs) return null;
    this.lastEventAt = now;
    return { confidence: motionConfidence(changedFraction, this.minArea), changedFraction };
  }

  /**
   * Fits frame ~ gain * background + offset over the watched samples: the median difference selects the pixels
   * that follow the global change, a least-squares line through them gives gain and offset. Also measures the
   * fraction of samples that differ from the background before compensation.
   */
  private estimateLighting(frame: Uint8Array): void {
    this.gain = 1;
    this.offset = 0;
    this.shiftedFraction = 0;
    const samples = this.samples;
    const total = samples.length;
    if (total === 0) return;
    const background = this.background;
    const histogram = this.histogram;
    histogram.fill(0);
    for (let k = 0; k < total; k++) {
      const i = samples[k];
      histogram[frame[i] - ((background[i] + 0.5) | 0) + 255]++;
    }
    let bin = 0;
    for (let seen = histogram[0]; seen * 2 <= total;) seen += histogram[++bin];
    const median = bin - 255;

    const pixelDelta = this.pixelDelta;
    let shifted = 0;
    let n = 0;
    let sumB = 0;
    let sumF = 0;
    let sumBB = 0;
    let sumBF = 0;
    for (let k = 0; k < total; k++) {
      const i = samples[k];
      const b = background[i];
      const f = frame[i];
      const shift = f - b;
      if (shift > pixelDelta || shift < -pixelDelta) shifted++;
      const deviation = shift - median;
      if (deviation <= FIT_TOLERANCE && deviation >= -FIT_TOLERANCE) {
        n++;
        sumB += b;
        sumF += f;
        sumBB += b * b;
        sumBF += b * f;
      }
    }
    this.shiftedFraction = shifted / total;
    if (n * 4 < total) {
      this.offset = median;
      return;
    }
    const meanB = sumB / n;
    const meanF = sumF / n;
    const variance = sumBB / n - meanB * meanB;
    const gain = variance >= MIN_FIT_VARIANCE ? (sumBF / n - meanB * meanF) / variance : 1;
    if (gain >= MIN_GAIN && gain <= MAX_GAIN) {
      this.gain = gain;
      this.offset = meanF - gain * meanB;
    } else {
      this.offset = meanF - meanB;
    }
  }

  /**
   * The one pass over every pixel: compares with the compensated background, counts watched changes per block
   * and moves the background towards the frame. Sets `changedPixels`.
   */
  private compareAndLearn(frame: Uint8Array, warmingUp: boolean): void {
    const { width, height, background, watched, blockChanged, blocksPerRow, gain, offset, pixelDelta } = this;
    const stillWeight = warmingUp ? this.warmupWeight : this.stillWeight;
    const motionWeight = warmingUp ? this.warmupWeight : this.motionWeight;
    let changed = 0;
    for (let y = 0, i = 0; y < height; y++) {
      const blockRow = (y >> BLOCK_SHIFT) * blocksPerRow;
      for (let x = 0; x < width; x++, i++) {
        const f = frame[i];
        const b = background[i];
        const shift = f - b;
        let expected = gain * b + offset;
        if (expected > 255) expected = 255;
        else if (expected < 0) expected = 0;
        const difference = f - expected;
        if (difference > pixelDelta || difference < -pixelDelta) {
          background[i] = b + motionWeight * shift;
          const w = watched[i];
          changed += w;
          blockChanged[blockRow + (x >> BLOCK_SHIFT)] += w;
        } else {
          background[i] = b + stillWeight * shift;
        }
      }
    }
    this.changedPixels = changed;
  }

  /** Sums the changes of blocks with enough changed pixels (isolated ones are noise) and clears the counts. */
  private countBlockChanges(): number {
    const { blockChanged, blockMinimum } = this;
    let changed = 0;
    for (let k = 0; k < blockChanged.length; k++) {
      const count = blockChanged[k];
      if (count >= blockMinimum[k]) changed += count;
      blockChanged[k] = 0;
    }
    return changed;
  }

  private applyZones(zones: DetectionZone[]): void {
    const { width, height, watched, blockMinimum, blocksPerRow } = this;
    const mask = zoneMask(width, height, zones);
    if (mask === null) watched.fill(1);
    else watched.set(mask);

    let watchedCount = 0;
    let gridCount = 0;
    const blockWatched = new Uint8Array(blockMinimum.length);
    for (let y = 0, i = 0; y < height; y++) {
      for (let x = 0; x < width; x++, i++) {
        if (watched[i] === 0) continue;
        watchedCount++;
        if ((x & 3) === 0 && (y & 1) === 0) gridCount++;
        blockWatched[(y >> BLOCK_SHIFT) * blocksPerRow + (x >> BLOCK_SHIFT)]++;
      }
    }
    for (let k = 0; k < blockMinimum.length; k++) {
      const n = blockWatched[k];
      blockMinimum[k] = n < 2 ? BLOCK_IGNORED : Math.max(2, Math.ceil((n * 4) / BLOCK_PIXELS));
    }

    // The lighting fit samples every fourth pixel of every other row (an eighth), or every watched pixel of a
    // small zone, so a few hundred pixels at least decide the gain.
    const useGrid = gridCount >= MIN_SAMPLES;
    const samples = new Uint32Array(useGrid ? gridCount : watchedCount);
    let k = 0;
    for (let y = 0, i = 0; y < height; y++) {
      for (let x = 0; x < width; x++, i++) {
        if (watched[i] !== 0 && (!useGrid || ((x & 3) === 0 && (y & 1) === 0))) samples[k++] = i;
      }
    }
    this.samples = samples;
    this.watchedCount = watchedCount;
  }
}
