import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/server/config.js";
import { type AddressCategory, classifyAddress, parseIPv6, vetAddress } from "../../src/core/net-address.js";
import { checkTargetUrl } from "../../src/server/webhooks/outbound.js";

const TABLE: [string, AddressCategory][] = [
  // IPv4
  ["8.8.8.8", "public"],
  ["1.1.1.1", "public"],
  ["93.184.215.14", "public"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "unspecified"],
  ["10.0.0.1", "private"],
  ["10.255.255.255", "private"],
  ["11.0.0.1", "public"],
  ["100.63.255.255", "public"],
  ["100.64.0.1", "shared"],
  ["100.127.255.255", "shared"],
  ["100.128.0.0", "public"],
  ["100.100.100.200", "metadata"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["169.254.0.1", "link-local"],
  ["169.254.169.254", "metadata"],
  ["169.254.170.2", "metadata"],
  ["172.15.255.255", "public"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["172.32.0.0", "public"],
  ["192.0.0.8", "reserved"],
  ["192.0.0.192", "metadata"],
  ["192.0.2.10", "reserved"],
  ["192.88.99.1", "reserved"],
  ["192.167.255.255", "public"],
  ["192.168.1.1", "private"],
  ["198.18.0.1", "reserved"],
  ["198.19.255.255", "reserved"],
  ["198.51.100.7", "reserved"],
  ["203.0.113.9", "reserved"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.255", "broadcast"],
  // IPv6
  ["2606:4700:4700::1111", "public"],
  ["2a00:1450:4001:81b::200e", "public"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["fc00::1", "private"],
  ["fd12:3456:789a::1", "private"],
  ["fd00:ec2::254", "metadata"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local"],
  ["febf:ffff::1", "link-local"],
  ["fec0::1", "reserved"],
  ["ff02::1", "multicast"],
  ["100::1", "reserved"],
  ["2001:db8::1", "reserved"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"], // Teredo
  ["3fff::1", "reserved"],
  ["5f00::1", "reserved"],
  // IPv4 inside IPv6: judged by the IPv4 address
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["0:0:0:0:0:ffff:7f00:0001", "loopback"],
  ["::ffff:10.1.2.3", "private"],
  ["::ffff:a9fe:a9fe", "metadata"],
  ["::ffff:0.0.0.0", "unspecified"],
  ["::ffff:8.8.8.8", "public"],
  ["64:ff9b::127.0.0.1", "loopback"],
  ["64:ff9b::c0a8:101", "private"],
  ["64:ff9b::8.8.8.8", "public"],
  ["64:ff9b:1::a00:1", "reserved"], // local-use NAT64
  ["2002:7f00:1::", "loopback"], // 6to4 of 127.0.0.1
  ["2002:a9fe:a9fe::1", "metadata"],
  ["2002:808:808::1", "public"],
  ["::7f00:1", "reserved"], // deprecated IPv4-compatible
  ["::127.0.0.1", "reserved"],
  // not addresses: refused, never guessed at
  ["localhost", "invalid"],
  ["2130706433", "invalid"],
  ["0x7f.0.0.1", "invalid"],
  ["0177.0.0.1", "invalid"],
  ["127.1", "invalid"],
  ["", "invalid"],
];

describe("classifyAddress", () => {
  it.each(TABLE)("%s is %s", (address, category) => {
    expect(classifyAddress(address).category).toBe(category);
  });

  it("parses the IPv6 spellings of one address to the same value", () => {
    const value = parseIPv6("::ffff:127.0.0.1");
    expect(value).toBe(0xffff_7f00_0001n);
    expect(parseIPv6("::ffff:7f00:1")).toBe(value);
    expect(parseIPv6("0:0:0:0:0:FFFF:7F00:1")).toBe(value);
    expect(parseIPv6("2001:db8::8:800:200c:417a")).toBe(0x2001_0db8_0000_0000_0008_0800_200c_417an);
    expect(parseIPv6("1::")).toBe(1n << 112n);
    expect(parseIPv6("1:2:3:4:5:6:7:8:9")).toBeNull();
    expect(parseIPv6("1::2::3")).toBeNull();
    expect(parseIPv6("12345::")).toBeNull();
  });
});

describe("vetAddress", () => {
  const production = { allowPrivateTargets: false };
  const development = { allowPrivateTargets: true };

  it("lets only public addresses through in production mode", () => {
    for (const [address, category] of TABLE) {
      expect(vetAddress(address, production) === null, address).toBe(category === "public");
    }
  });

  it("with private targets allowed, opens loopback, private and shared, and nothing else", () => {
    const opened = new Set<AddressCategory>(["public", "loopback", "private", "shared"]);
    for (const [address, category] of TABLE) {
      expect(vetAddress(address, development) === null, address).toBe(opened.has(category));
    }
  });

  it("explains a refusal and names the setting only where it would help", () => {
    expect(vetAddress("127.0.0.1", production)).toBe(
      "127.0.0.1 is a loopback address (127.0.0.0/8); set MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1 to allow it",
    );
    expect(vetAddress("::ffff:169.254.169.254", development)).toBe(
      "::ffff:169.254.169.254 is a cloud metadata address (169.254.169.254/32 in ::ffff:0:0/96); webhooks may never target it",
    );
  });
});

describe("checkTargetUrl", () => {
  const production = { allowPrivateTargets: false };
  const development = { allowPrivateTargets: true };

  it("accepts public http(s) URLs and hostnames (those are vetted when connecting)", () => {
    expect(checkTargetUrl("https://hooks.example.com/meetbot?x=1", production)).toBeNull();
    expect(checkTargetUrl("http://8.8.8.8:8080/", production)).toBeNull();
    expect(checkTargetUrl("https://[2606:4700:4700::1111]/", production)).toBeNull();
    expect(checkTargetUrl("https://user:pass@hooks.example.com/", production)).toBeNull();
  });

  it("refuses other schemes and garbage", () => {
    expect(checkTargetUrl("ftp://example.com/", production)).toBe("must be an http(s) URL");
    expect(checkTargetUrl("file:///etc/passwd", production)).toBe("must be an http(s) URL");
    expect(checkTargetUrl("gopher://127.0.0.1:6379/_", development)).toBe("must be an http(s) URL");
    expect(checkTargetUrl("not a url", production)).toBe("not a valid URL");
    expect(checkTargetUrl("http://", production)).toBe("not a valid URL");
  });

  // The WHATWG URL parser turns these spellings into 127.0.0.1 before anything else sees them.
  it.each([
    "http://127.0.0.1/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://0x7f000001/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://localhost:3000/",
    "http://LOCALHOST./",
    "http://api.localhost/",
  ])("refuses the loopback target %s in production mode, allows it with the setting", (url) => {
    expect(checkTargetUrl(url, production)).toMatch(/MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1/);
    expect(checkTargetUrl(url, development)).toBeNull();
  });

  it.each([
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://[::ffff:169.254.169.254]/",
    "http://0xa9fea9fe/",
    "http://100.100.100.200/",
    "http://0.0.0.0:8080/",
    "http://[fe80::1]/",
    "http://224.0.0.1/",
  ])("always refuses %s", (url) => {
    expect(checkTargetUrl(url, development)).toMatch(/may never target it/);
  });
});

describe("config.outbound", () => {
  const resolve = (env: NodeJS.ProcessEnv) => resolveConfig({ dataDir: "/tmp/meetbot-test", env }).outbound;

  it("defaults to production mode and the spec's timeouts", () => {
    expect(resolve({})).toEqual({
      allowPrivateTargets: false,
      connectTimeoutMs: 10_000,
      responseTimeoutMs: 30_000,
    });
  });

  it("reads the setting and the timeouts from the environment", () => {
    expect(
      resolve({
        MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "1",
        MEETBOT_WEBHOOK_CONNECT_TIMEOUT_MS: "500",
        MEETBOT_WEBHOOK_RESPONSE_TIMEOUT_MS: "700",
      }),
    ).toEqual({ allowPrivateTargets: true, connectTimeoutMs: 500, responseTimeoutMs: 700 });
    expect(resolve({ MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "0" }).allowPrivateTargets).toBe(false);
  });

  it("stops on a setting that is neither 1 nor 0 rather than guessing", () => {
    expect(() => resolve({ MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: "yes" })).toThrow(
      'MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS: must be 1 or 0 (got "yes")',
    );
  });
});
