/** `describe` for suites that need ffmpeg and the fake RTSP camera (see global-setup's probeMedia). */
export const describeWithMedia: jest.Describe = process.env.VIGIL_TEST_MEDIA ? describe : describe.skip;
