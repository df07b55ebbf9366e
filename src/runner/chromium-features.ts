/**
 * Feature switches. Chromium takes only the last --enable-features and --disable-features it is
 * given, and Playwright passes lists of its own first, so ours repeat Playwright's (as of 1.65;
 * test/e2e/runner-browser.test.ts fails if Playwright's lists grow past these) and add two that
 * move services into the browser process, a process each and ~35 MB of PSS fewer together (one
 * video bot's tree: 602 → ~582 MB measured, with the other changes of the same round): the
 * network service (NetworkServiceInProcess2; a bot loads one page) and the audio service
 * (AudioServiceOutOfProcess off; its output thread still runs at its own priority, and the call
 * sink's 100 ms blocks absorb a late one).
 */
const ENABLED_FEATURES = [
  "CDPScreenshotNewSurface",
  "SkipListAccountsWithoutGaiaCookies",
  "NetworkServiceInProcess2",
];
const DISABLED_FEATURES = [
  ...["AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades"],
  ...["HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding"],
  ...["ThirdPartyStoragePartitioning", "AvoidCorsURLLoaderRestartOnRedirect", "TcpPortRandomizationWin"],
  ...["OptimizationHints", "NetworkTimeServiceQuerying", "AimEnabled", "PreconnectToSearch"],
  ...["msForceBrowserSignIn", "msEdgeUpdateLaunchServicesPreferredVersion"],
  "AudioServiceOutOfProcess",
];

/** Playwright's feature lists with ours: the network and audio services in the browser process. */
export const FEATURE_ARGS = [
  `--enable-features=${ENABLED_FEATURES.join(",")}`,
  `--disable-features=${DISABLED_FEATURES.join(",")}`,
];
