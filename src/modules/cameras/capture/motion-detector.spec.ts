import type { DetectionZone, MotionSensitivity } from '../entities/camera.entity';
import {
  FULL_CONFIDENCE_FRACTION,
  MotionDetector,
  motionConfidence,
  MotionEvent,
  MotionObservation,
  MotionSettings,
  SENSITIVITY_THRESHOLDS,
  zoneMask,
} from './motion-detector';

const W = 320;
const H = 180;
const FPS = 5;

/**
 * Deterministic pseudo-random numbers in [0, 1) (xorshift32), so every run sees the same frames. Bit operations
 * only: inside Jest's sandbox every `Math.*` call costs microseconds, which per pixel would make the suite crawl.
 */
function random(seed: number): () => number {
  let state = seed | 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
}

/** A textured scene, 45..205: a smooth pattern plus fixed grain. */
function texture(seed: number): Uint8Array {
  const next = random(seed);
  const image = new Uint8Array(W * H);
  for (let y = 0, i = 0; y < H; y++) {
    for (let x = 0; x < W; x++, i++) {
      image[i] = Math.round(125 + 50 * Math.sin(x / 9) * Math.cos(y / 7) + (next() - 0.5) * 60);
    }
  }
  return image;
}

interface Square {
  x: number;
  y: number;
  size: number;
  /** Paints this value (default 250)... */
  value?: number;
  /** ...or adds this to the scene. */
  add?: number;
}

interface Look {
  /** Objects in the scene (lit like the rest)... */
  squares?: Square[];
  /** ...and objects painted after the lighting. */
  overlay?: Square[];
  /** Uniform noise of up to +-noise levels per pixel and frame (default 6). */
  noise?: number;
  /** Lighting applied to the whole picture: value * gain + offset (default 1, 0), or any per-pixel function. */
  gain?: number;
  offset?: number;
  light?: (value: number, x: number, y: number) => number;
}

function paint(image: Float64Array, squares: Square[]): void {
  for (const { x, y, size, value, add } of squares) {
    for (let row = Math.max(0, y); row < Math.min(H, y + size); row++) {
      for (let col = Math.max(0, x); col < Math.min(W, x + size); col++) {
        const i = row * W + col;
        image[i] = add === undefined ? (value ?? 250) : image[i] + add;
      }
    }
  }
}

class Scene {
  private readonly noise: () => number;

  constructor(
    private readonly base: Uint8Array,
    seed = 7,
  ) {
    this.noise = random(seed);
  }

  render(look: Look = {}): Uint8Array {
    const { squares = [], overlay = [], noise = 6, gain = 1, offset = 0, light } = look;
    const image = new Float64Array(W * H);
    image.set(this.base);
    paint(image, squares);
    for (let y = 0, i = 0; y < H; y++) {
      for (let x = 0; x < W; x++, i++) image[i] = light ? light(image[i], x, y) : image[i] * gain + offset;
    }
    paint(image, overlay);
    const frame = new Uint8Array(W * H);
    for (let i = 0; i < image.length; i++) {
      const value = image[i] + (this.noise() * 2 - 1) * noise;
      // Clamped, then rounded (a Uint8Array store truncates).
      frame[i] = (value < 0 ? 0 : value > 255 ? 255 : value) + 0.5;
    }
    return frame;
  }
}

interface Seen extends MotionObservation {
  t: number;
}

/** Feeds frames for t in [from, to) seconds at `fps`; `look` decides each frame. */
function feed(
  detector: MotionDetector,
  scene: Scene,
  from: number,
  to: number,
  look: (t: number) => Look,
  fps = FPS,
) {
  const seen: Seen[] = [];
  for (let k = Math.round(from * fps); k < Math.round(to * fps); k++) {
    const t = k / fps;
    seen.push({ t, ...detector.analyse(scene.render(look(t)), Math.round(t * 1000)) });
  }
  return seen;
}

const events = (seen: Seen[]): (MotionEvent & { t: number })[] =>
  seen.filter((s) => s.event !== null).map((s) => ({ t: s.t, ...s.event! }));
const motionTimes = (seen: Seen[]) => seen.filter((s) => s.motion).map((s) => s.t);
const maxFraction = (seen: Seen[]) => Math.max(...seen.map((s) => s.changedFraction));

function settings(overrides: Partial<MotionSettings> = {}): MotionSettings {
  return { sensitivity: 'medium', zones: [], cooldownSeconds: 0, frameRate: FPS, ...overrides };
}

/** A 30x30 bright square crossing the frame at 40 px/s from x = 20 when t = start. */
const crossing =
  (start: number, end: number, square: Partial<Square> = {}) =>
  (t: number): Look =>
    t >= start && t < end
      ? { squares: [{ x: 20 + Math.round(40 * (t - start)), y: 70, size: 30, ...square }] }
      : {};

const still = (): Look => ({});

const rectangle = (
  name: string,
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  enabled = true,
): DetectionZone => ({
  name,
  enabled,
  points: [
    [x0, y0],
    [x1, y0],
    [x1, y1],
    [x0, y1],
  ],
});

describe('MotionDetector', () => {
  const base = texture(1);

  it.each<MotionSensitivity>(['high', 'medium', 'low'])(
    'ignores a still scene with +-6 noise (%s)',
    (sensitivity) => {
      const detector = new MotionDetector(W, H, settings({ sensitivity }));
      const seen = feed(detector, new Scene(base), 0, 60, still);

      expect(maxFraction(seen)).toBe(0);
      expect(motionTimes(seen)).toEqual([]);
      expect(seen.some((s) => s.inEpisode)).toBe(false);
    },
  );

  it('ignores isolated changed pixels such as compression speckles', () => {
    const detector = new MotionDetector(W, H, settings({ sensitivity: 'high' }));
    const scene = new Scene(base);
    const speckles = random(3);
    const seen: Seen[] = [];
    for (let k = 0; k < 30 * FPS; k++) {
      const frame = scene.render();
      // 1 % of the pixels get a random value: several times the 0.2 % minimum area, but scattered.
      for (let i = 0; i < frame.length; i++) if (speckles() < 0.01) frame[i] = Math.floor(speckles() * 256);
      seen.push({ t: k / FPS, ...detector.analyse(frame, Math.round((k * 1000) / FPS)) });
    }

    expect(maxFraction(seen)).toBeLessThan(SENSITIVITY_THRESHOLDS.high.minArea / 4);
    expect(motionTimes(seen)).toEqual([]);
  });

  it('reports one event per episode of a moving square, starting on its second frame', () => {
    const detector = new MotionDetector(W, H, settings());
    const look = (t: number) => (t < 20 ? crossing(10, 14)(t) : crossing(20, 24)(t));
    const seen = feed(detector, new Scene(base), 0, 30, look);

    expect(events(seen).map((e) => e.t)).toEqual([10.2, 20.2]);
    // Motion exactly while the square is in view: it leaves no trail behind.
    const inView = seen.filter((s) => look(s.t).squares !== undefined).map((s) => s.t);
    expect(motionTimes(seen)).toEqual(inView);
    for (const e of events(seen)) {
      expect(e.changedFraction).toBeGreaterThan((0.8 * 900) / (W * H));
      expect(e.changedFraction).toBeLessThan((1.2 * 900) / (W * H));
      expect(e.confidence).toBe(motionConfidence(e.changedFraction, SENSITIVITY_THRESHOLDS.medium.minArea));
    }
    // The episode lasts while the square moves and ends 2 s after it left.
    const episode = seen.filter((s) => s.inEpisode).map((s) => s.t);
    expect(episode[0]).toBe(10.2);
    expect(episode.filter((t) => t < 20).at(-1)).toBe(15.6);
    expect(seen.find((s) => s.t === 15.8)?.inEpisode).toBe(false);
    expect(episode.filter((t) => t >= 20)[0]).toBe(20.2);
  });

  it('never gives an episode a second event, however long it lasts', () => {
    const detector = new MotionDetector(W, H, settings({ cooldownSeconds: 0 }));
    // Every 3 s the square crosses for 1.4 s, then is out of view for 1.6 s: less than the 2 s that end an episode.
    const seen = feed(detector, new Scene(base), 0, 40, (t) => {
      const cycle = t - ((t - 10) % 3);
      return t >= 10 && t < 30 ? crossing(cycle, cycle + 1.4)(t) : {};
    });

    expect(events(seen).map((e) => e.t)).toEqual([10.2]);
    expect(seen.filter((s) => s.t >= 10.2 && s.t < 30).every((s) => s.inEpisode)).toBe(true);
  });

  it('ignores a single-frame glitch', () => {
    const detector = new MotionDetector(W, H, settings());
    const seen = feed(detector, new Scene(base), 0, 20, (t) =>
      t === 10 ? { squares: [{ x: 100, y: 50, size: 60 }] } : {},
    );

    expect(motionTimes(seen)).toEqual([10]);
    expect(events(seen)).toEqual([]);
    expect(seen.some((s) => s.inEpisode)).toBe(false);
  });

  it('absorbs a parked object into the background after tens of seconds, at any frame rate', () => {
    const parkedFor = (fps: number) => {
      const detector = new MotionDetector(W, H, settings({ frameRate: fps }));
      const seen = feed(
        detector,
        new Scene(base),
        0,
        70,
        (t) => (t >= 10 ? { squares: [{ x: 100, y: 60, size: 40 }] } : {}),
        fps,
      );
      const [event, ...more] = events(seen);
      expect(more).toEqual([]);
      expect(event.t).toBeCloseTo(10 + 1 / fps, 6);
      const lastMotion = motionTimes(seen).at(-1)!;
      expect(seen.at(-1)!.inEpisode).toBe(false);
      return lastMotion - 10;
    };

    const at5 = parkedFor(5);
    // Much slower than the 2 s of still pixels, so a person standing still is not absorbed at once...
    expect(at5).toBeGreaterThan(15);
    // ...but a parked car does not keep the episode open for ever.
    expect(at5).toBeLessThan(45);
    // The time constants are in seconds, not frames.
    expect(Math.abs(parkedFor(30) - at5)).toBeLessThan(0.15 * at5);
    expect(Math.abs(parkedFor(1) - at5)).toBeLessThan(0.15 * at5);
  });

  it('follows a slow, uneven change of light over a minute', () => {
    const detector = new MotionDetector(W, H, settings({ sensitivity: 'high' }));
    // Dusk: the right side darkens by up to 40 %, while the whole picture brightens by 30 levels.
    const seen = feed(detector, new Scene(base), 0, 70, (t) => {
      const progress = Math.min(1, Math.max(0, (t - 5) / 60));
      return { light: (v, x) => v * (1 - 0.4 * progress * (x / W)) + 30 * progress };
    });

    expect(motionTimes(seen)).toEqual([]);
    expect(events(seen)).toEqual([]);
  });

  it('compensates sudden global brightness jumps and still sees motion under the new light', () => {
    const detector = new MotionDetector(W, H, settings({ sensitivity: 'high' }));
    const seen = feed(detector, new Scene(base), 0, 45, (t) => {
      if (t < 10) return {};
      if (t < 20) return { offset: 50 }; // a lamp switches on
      if (t < 30) return { gain: 0.6 }; // auto exposure darkens everything
      if (t < 40) return { gain: 1.5 }; // then overexposes: the brightest parts saturate at 255
      return { gain: 1.5, overlay: crossing(40, 45, { value: 10 })(t).squares };
    });

    const before = seen.filter((s) => s.t < 40);
    expect(maxFraction(before)).toBeLessThan(SENSITIVITY_THRESHOLDS.high.minArea / 2);
    expect(motionTimes(before)).toEqual([]);
    expect(events(seen).map((e) => e.t)).toEqual([40.2]);
  });

  it('treats a change of almost every pixel that compensation cannot explain as lighting, and re-learns', () => {
    const detector = new MotionDetector(W, H, settings());
    // A night-vision switch: each 8x8 block turns black or white, unrelated to what it was.
    const flip = random(11);
    const columns = Math.ceil(W / 8);
    const night = new Uint8Array(columns * Math.ceil(H / 8)).map(() => (flip() < 0.5 ? 0 : 255));
    const nightLight = (_v: number, x: number, y: number) => night[(y >> 3) * columns + (x >> 3)];
    const seen = feed(detector, new Scene(base), 0, 30, (t) => {
      if (t < 10) return {};
      if (t < 20) return { light: nightLight };
      // Motion in the new scene is seen once it is learnt: a mid-grey square over black and white.
      const square = crossing(20, 24, { value: 128 })(t).squares;
      return { light: nightLight, overlay: square };
    });

    const switchFrame = seen.find((s) => s.t === 10)!;
    expect(switchFrame.changedFraction).toBeGreaterThan(0.85);
    expect(switchFrame.motion).toBe(false);
    expect(motionTimes(seen.filter((s) => s.t < 20))).toEqual([]);
    expect(events(seen).map((e) => e.t)).toEqual([20.2]);
  });

  it('reports an object filling most of the frame as motion, not as a lighting change', () => {
    const detector = new MotionDetector(W, H, settings());
    // A lorry stops right in front of the camera, hiding three quarters of the picture.
    const seen = feed(detector, new Scene(base), 0, 14, (t) =>
      t >= 10 ? { squares: [{ x: 0, y: 0, size: 240 }] } : {},
    );

    expect(events(seen).map((e) => e.t)).toEqual([10.2]);
    expect(events(seen)[0].confidence).toBe(100);
    expect(seen.filter((s) => s.t >= 10).every((s) => s.motion)).toBe(true);
  });

  describe('zones', () => {
    // The square covers x = 20..202 px on its way: inside the left 65 % of the frame.
    const look = crossing(10, 14);
    const run = (zones: DetectionZone[]) =>
      feed(new MotionDetector(W, H, settings({ zones })), new Scene(base), 0, 16, look);

    it('ignores motion outside every enabled zone', () => {
      const seen = run([rectangle('right', 0.65, 0, 1, 1), rectangle('left', 0, 0, 0.65, 1, false)]);
      expect(maxFraction(seen)).toBe(0);
      expect(events(seen)).toEqual([]);
    });

    it('reports motion inside a zone, as a fraction of the watched pixels', () => {
      const whole = run([]);
      const half = run([rectangle('left', 0, 0, 0.5, 1), rectangle('off', 0.5, 0, 1, 1, false)]);
      expect(events(half).map((e) => e.t)).toEqual([10.2]);
      // Same changes while the square is wholly in the left half, over half as many watched pixels.
      const early = (seen: Seen[]) => seen.filter((s) => s.t >= 10 && s.t < 12).map((s) => s.changedFraction);
      const ratios = early(half).map((f, k) => f / early(whole)[k]);
      expect(ratios).toHaveLength(10);
      for (const ratio of ratios) expect(ratio).toBeCloseTo(2, 1);
    });
  });

  describe('cooldown', () => {
    // Two episodes starting 5 s apart, and a third 31 s after the first.
    const look = (t: number) =>
      t < 15 ? crossing(10, 11.5)(t) : t < 41 ? crossing(15, 16.5)(t) : crossing(41, 42.5)(t);

    it('suppresses the event of an episode that starts within the cooldown', () => {
      const seen = feed(
        new MotionDetector(W, H, settings({ cooldownSeconds: 30 })),
        new Scene(base),
        0,
        45,
        look,
      );
      expect(events(seen).map((e) => e.t)).toEqual([10.2, 41.2]);
      // The second episode happened, without an event.
      expect(seen.find((s) => s.t === 15.2)?.inEpisode).toBe(true);
      expect(seen.find((s) => s.t === 14)?.inEpisode).toBe(false);
    });

    it('measures time on the frame timestamps, whatever the frame rate', () => {
      const at30 = feed(
        new MotionDetector(W, H, settings({ cooldownSeconds: 30, frameRate: 30 })),
        new Scene(base),
        0,
        45,
        look,
        30,
      );
      // Second frames of the first and third episodes (frame numbers at 30 fps).
      expect(events(at30).map((e) => Math.round(e.t * 30))).toEqual([301, 1231]);
    });

    it('counts a timestamp that goes backwards (a restarted stream) as no time passing', () => {
      const eventsAfterRestart = (cooldownSeconds: number) => {
        const detector = new MotionDetector(W, H, settings({ cooldownSeconds }));
        const first = feed(detector, new Scene(base), 0, 12, crossing(10, 11));
        detector.reset();
        // 1.8 s after the first event, the clock restarts at 0: the next event comes 11.8 s after the first.
        return [...events(first), ...events(feed(detector, new Scene(base), 0, 11, crossing(10, 11)))].map(
          (e) => e.t,
        );
      };
      expect(eventsAfterRestart(10)).toEqual([10.2, 10.2]);
      expect(eventsAfterRestart(12)).toEqual([10.2]);
    });

    it('gives every episode its event with cooldown 0', () => {
      const seen = feed(
        new MotionDetector(W, H, settings({ cooldownSeconds: 0 })),
        new Scene(base),
        0,
        45,
        look,
      );
      expect(events(seen).map((e) => e.t)).toEqual([10.2, 15.2, 41.2]);
    });
  });

  describe('sensitivity', () => {
    const eventsAt = (sensitivity: MotionSensitivity, square: Partial<Square>) =>
      events(
        feed(
          new MotionDetector(W, H, settings({ sensitivity })),
          new Scene(base),
          0,
          14,
          crossing(10, 14, square),
        ),
      );

    it('sees a small object (14x14 px, 0.34 % of the frame) only at high sensitivity', () => {
      expect(eventsAt('high', { size: 14 })).toHaveLength(1);
      expect(eventsAt('medium', { size: 14 })).toEqual([]);
      expect(eventsAt('low', { size: 14 })).toEqual([]);
    });

    it('sees a faint object (30 levels brighter) at high and medium sensitivity only', () => {
      const faint = { size: 40, value: undefined, add: 30 };
      expect(eventsAt('high', faint)).toHaveLength(1);
      expect(eventsAt('medium', faint)).toHaveLength(1);
      expect(eventsAt('low', faint)).toEqual([]);
    });
  });

  describe('warm-up', () => {
    it('reports no motion while the first frames settle, then detects normally', () => {
      const detector = new MotionDetector(W, H, settings());
      const jumping = random(5);
      const seen = feed(detector, new Scene(base), 0, 14, (t) => {
        if (t === 0) return { light: () => 0 }; // the decoder's first frame is black
        if (t <= 2)
          return { squares: [{ x: Math.floor(jumping() * 280), y: Math.floor(jumping() * 140), size: 40 }] };
        return crossing(10, 14)(t);
      });

      // Something moved until 2 s: the warm-up waits for it to stop and leaves no ghost behind.
      expect(motionTimes(seen.filter((s) => s.t < 10))).toEqual([]);
      expect(events(seen).map((e) => e.t)).toEqual([10.2]);
    });

    const firstMotion = (fps: number, start: number) => {
      const detector = new MotionDetector(W, H, settings({ frameRate: fps }));
      return motionTimes(feed(detector, new Scene(base), 0, 6, crossing(start, 6), fps))[0];
    };

    it('lasts a second (at least 3 frames) in a still scene', () => {
      expect(firstMotion(5, 1.2)).toBeCloseTo(1.2, 6);
      expect(firstMotion(30, 1.2)).toBeCloseTo(1.2, 6);
      expect(firstMotion(1, 1.2)).toBe(3);
    });

    it('waits up to 3 s for motion that started during it to stop', () => {
      expect(firstMotion(5, 0.4)).toBeCloseTo(3, 6);
      expect(firstMotion(30, 0.4)).toBeCloseTo(3, 6);
    });
  });

  it('keeps the background when reconfigured', () => {
    const detector = new MotionDetector(W, H, settings({ sensitivity: 'low' }));
    const scene = new Scene(base);
    const parked = { squares: [{ x: 100, y: 60, size: 40 }] };
    const before = feed(detector, scene, 0, 10, still);
    const arrival = feed(detector, scene, 10, 10.4, () => parked);

    detector.configure(
      settings({ sensitivity: 'high', cooldownSeconds: 60, zones: [rectangle('all', 0, 0, 1, 1)] }),
    );
    const after = feed(detector, scene, 10.4, 13, () => parked);
    const settled = feed(detector, scene, 13, 20, still);

    expect(motionTimes(before)).toEqual([]);
    expect(events(arrival).map((e) => e.t)).toEqual([10.2]);
    // Still compared with the learnt empty scene: no new warm-up, the square is still a change...
    expect(after[0].motion).toBe(true);
    expect(after[0].changedFraction).toBeGreaterThan((0.9 * 1600) / (W * H));
    // ...in the same episode, and with the 60 s cooldown, its departure makes no event either.
    expect(after.every((s) => s.inEpisode)).toBe(true);
    expect(events([...after, ...settled])).toEqual([]);
  });

  it('relearns the background after reset() without reporting the difference as motion', () => {
    const detector = new MotionDetector(W, H, settings());
    feed(detector, new Scene(base), 0, 10, still);
    detector.reset();
    // The stream reconnected and the camera now sees another scene (and restarted its clock).
    const seen = feed(detector, new Scene(texture(2)), 0, 14, crossing(10, 14));

    expect(motionTimes(seen.filter((s) => s.t < 10))).toEqual([]);
    expect(events(seen).map((e) => e.t)).toEqual([10.2]);
  });

  it('refuses frames of the wrong size and invalid settings', () => {
    const detector = new MotionDetector(W, H, settings());
    expect(() => detector.analyse(new Uint8Array(W * H - 1), 0)).toThrow(RangeError);
    expect(() => detector.analyse(new Uint8Array(W * H), Number.NaN)).toThrow(RangeError);
    expect(() => detector.configure(settings({ frameRate: 0 }))).toThrow(RangeError);
    expect(() => detector.configure(settings({ cooldownSeconds: -1 }))).toThrow(RangeError);
    expect(() => detector.configure(settings({ sensitivity: 'extreme' as MotionSensitivity }))).toThrow(
      RangeError,
    );
    expect(() => new MotionDetector(0, H, settings())).toThrow(RangeError);
  });
});

describe('zoneMask', () => {
  const render = (mask: Uint8Array | null, width: number) =>
    mask === null
      ? null
      : Array.from({ length: mask.length / width }, (_, y) =>
          Array.from(mask.subarray(y * width, (y + 1) * width), (v) => (v ? '#' : '.')).join(''),
        );

  it('watches the whole frame when no zone is enabled', () => {
    expect(zoneMask(8, 4, [])).toBeNull();
    expect(zoneMask(8, 4, [rectangle('off', 0, 0, 0.5, 0.5, false)])).toBeNull();
  });

  it('rasterises a rectangle on pixel centres', () => {
    expect(render(zoneMask(8, 8, [rectangle('r', 0.25, 0.25, 0.75, 0.75)]), 8)).toEqual([
      '........',
      '........',
      '..####..',
      '..####..',
      '..####..',
      '..####..',
      '........',
      '........',
    ]);
    expect(zoneMask(8, 4, [rectangle('all', 0, 0, 1, 1)])!.every((v) => v === 1)).toBe(true);
  });

  it('rasterises a triangle on pixel centres', () => {
    const triangle: DetectionZone = {
      name: 't',
      enabled: true,
      points: [
        [0, 0],
        [1, 0],
        [0, 1],
      ],
    };
    // Inside when (x + 0.5) / 8 + (y + 0.5) / 4 < 1.
    expect(render(zoneMask(8, 4, [triangle]), 8)).toEqual(['#######.', '#####...', '###.....', '#.......']);
  });

  it('unites the enabled zones and skips disabled ones', () => {
    const zones = [
      rectangle('left', 0, 0, 0.25, 0.5),
      rectangle('right', 0.75, 0.5, 1, 1),
      rectangle('off', 0.25, 0, 0.75, 1, false),
    ];
    expect(render(zoneMask(8, 4, zones), 8)).toEqual(['##......', '##......', '......##', '......##']);
  });

  it('agrees with a point-in-polygon test on every pixel centre of random polygons', () => {
    const next = random(17);
    /** Crossing-number test: a ray to the right of the point crosses an odd number of edges. */
    const inside = (px: number, py: number, points: [number, number][]) => {
      let odd = false;
      for (let k = 0, j = points.length - 1; k < points.length; j = k++) {
        const [xk, yk] = points[k];
        const [xj, yj] = points[j];
        if (yk > py !== yj > py && px < xk + ((py - yk) * (xj - xk)) / (yj - yk)) odd = !odd;
      }
      return odd;
    };
    for (let n = 0; n < 30; n++) {
      const points = Array.from({ length: 3 + (n % 6) }, (): [number, number] => [
        next() * 1.2 - 0.1,
        next() * 1.2 - 0.1,
      ]);
      const expected = Array.from({ length: 37 * 23 }, (_, i) =>
        inside(((i % 37) + 0.5) / 37, (Math.floor(i / 37) + 0.5) / 23, points) ? 1 : 0,
      );
      expect(Array.from(zoneMask(37, 23, [{ name: 'p', enabled: true, points }])!)).toEqual(expected);
    }
  });

  it('watches nothing when the enabled zones cover no pixel centre', () => {
    const sliver = rectangle('sliver', 0.01, 0.01, 0.05, 0.05);
    expect(Array.from(zoneMask(8, 4, [sliver])!)).toEqual(new Array(32).fill(0));
  });
});

describe('motionConfidence', () => {
  it.each(Object.entries(SENSITIVITY_THRESHOLDS))(
    'grows with the area within 1..100 (%s)',
    (_, { minArea }) => {
      let previous = 0;
      for (let k = 0; k <= 1000; k++) {
        const confidence = motionConfidence(k / 1000, minArea);
        expect(Number.isInteger(confidence)).toBe(true);
        expect(confidence).toBeGreaterThanOrEqual(Math.max(1, previous));
        expect(confidence).toBeLessThanOrEqual(100);
        previous = confidence;
      }
      expect(motionConfidence(minArea, minArea)).toBe(50);
      expect(motionConfidence(FULL_CONFIDENCE_FRACTION, minArea)).toBe(100);
      expect(motionConfidence(1, minArea)).toBe(100);
      expect(motionConfidence(0, minArea)).toBe(1);
      expect(motionConfidence(Math.sqrt(minArea * FULL_CONFIDENCE_FRACTION), minArea)).toBe(75);
    },
  );

  it('gives a bigger moving object a higher confidence', () => {
    const confidenceOf = (size: number) => {
      const seen = feed(
        new MotionDetector(W, H, settings()),
        new Scene(texture(1)),
        0,
        12,
        crossing(10, 12, { size }),
      );
      return events(seen).map((e) => e.confidence);
    };
    const [small] = confidenceOf(20);
    const [large] = confidenceOf(100);
    expect(small).toBeGreaterThanOrEqual(50);
    expect(large).toBeGreaterThan(small + 20);
    expect(large).toBeLessThanOrEqual(100);
  });
});
