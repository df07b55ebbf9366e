import net from "node:net";

/**
 * Which IP addresses a webhook (or a bot's audio stream, see bot-config.ts) may reach. Every address the outbound client would connect to
 * (an IP literal in the URL or each address a hostname resolves to) goes through vetAddress first.
 *
 * The rule: only globally reachable unicast addresses are "public". Everything the IANA
 * special-purpose registries mark as not globally reachable is refused, and in IPv6 everything
 * outside global unicast 2000::/3 is refused as well (an allow-list, so unassigned space is covered).
 * IPv6 forms that carry an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged by that address.
 */
export type AddressCategory =
  | "public"
  | "loopback"
  | "private"
  | "shared"
  | "link-local"
  | "metadata"
  | "multicast"
  | "unspecified"
  | "broadcast"
  | "reserved"
  | "invalid";

export interface AddressClass {
  category: AddressCategory;
  /** The range that matched, for messages, e.g. "127.0.0.0/8". */
  range: string;
}

/** What MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1 opens up. Metadata, link-local and the rest stay refused. */
const ALLOWED_WHEN_PRIVATE_TARGETS_ALLOWED: ReadonlySet<AddressCategory> = new Set([
  "loopback",
  "private",
  "shared",
]);

const DESCRIPTIONS: Record<AddressCategory, string> = {
  public: "a public address",
  loopback: "a loopback address",
  private: "a private address",
  shared: "a shared (carrier-grade NAT) address",
  "link-local": "a link-local address",
  metadata: "a cloud metadata address",
  multicast: "a multicast address",
  unspecified: "an unspecified address",
  broadcast: "the broadcast address",
  reserved: "a reserved, not globally reachable address",
  invalid: "not an IP address",
};

interface Rule {
  base: bigint;
  bits: number;
  range: string;
  category: AddressCategory;
}

function rules(width: 32 | 128, table: [string, AddressCategory][]): Rule[] {
  return table.map(([range, category]) => {
    const [prefix, length] = range.split("/");
    const base = width === 32 ? parseIPv4(prefix!) : parseIPv6(prefix!);
    if (base === null) throw new Error(`bad range ${range}`);
    return { base, bits: Number(length), range, category };
  });
}

// First match wins: single metadata addresses come before the ranges that contain them.
const V4_RULES = rules(32, [
  ["169.254.169.254/32", "metadata"], // AWS, GCP, Azure, OpenStack, DigitalOcean, ...
  ["169.254.170.2/32", "metadata"], // AWS ECS task metadata
  ["100.100.100.200/32", "metadata"], // Alibaba Cloud (inside the shared range, so listed by itself)
  ["192.0.0.192/32", "metadata"], // Oracle Cloud
  ["0.0.0.0/8", "unspecified"], // "this network"; Linux connects 0.0.0.0 to the local host
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "shared"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "reserved"], // IETF protocol assignments
  ["192.0.2.0/24", "reserved"], // documentation
  ["192.88.99.0/24", "reserved"], // 6to4 relay anycast (deprecated)
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "reserved"], // benchmarking
  ["198.51.100.0/24", "reserved"], // documentation
  ["203.0.113.0/24", "reserved"], // documentation
  ["224.0.0.0/4", "multicast"],
  ["255.255.255.255/32", "broadcast"],
  ["240.0.0.0/4", "reserved"],
  ["0.0.0.0/0", "public"],
]);

/** IPv6 forms whose last (or, for 6to4, bits 16-47) 32 bits are an IPv4 address that decides. */
const V6_EMBEDDING_V4 = rules(128, [
  ["::ffff:0:0/96", "public"], // IPv4-mapped
  ["64:ff9b::/96", "public"], // NAT64 well-known prefix
]);
const V6_6TO4 = rules(128, [["2002::/16", "public"]])[0]!;

const V6_RULES = rules(128, [
  ["fd00:ec2::254/128", "metadata"], // AWS IMDS over IPv6 (inside unique-local)
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["fc00::/7", "private"], // unique local
  ["fe80::/10", "link-local"],
  ["ff00::/8", "multicast"],
  ["2001::/23", "reserved"], // IETF protocol assignments, including Teredo 2001::/32
  ["2001:db8::/32", "reserved"], // documentation
  ["3fff::/20", "reserved"], // documentation
  ["2000::/3", "public"], // global unicast
  ["::/0", "reserved"], // everything else: IPv4-compatible ::/96, site-local, discard, unassigned
]);

function matches(value: bigint, width: number, rule: Rule): boolean {
  const shift = BigInt(width - rule.bits);
  return value >> shift === rule.base >> shift;
}

export function classifyAddress(address: string): AddressClass {
  const kind = net.isIP(address);
  if (kind === 4) {
    const value = parseIPv4(address);
    if (value !== null) return classifyV4(value);
  } else if (kind === 6) {
    const value = parseIPv6(address);
    if (value !== null) return classifyV6(value);
  }
  return { category: "invalid", range: address };
}

function classifyV4(value: bigint): AddressClass {
  const rule = V4_RULES.find((r) => matches(value, 32, r))!;
  return { category: rule.category, range: rule.range };
}

function classifyV6(value: bigint): AddressClass {
  const embedding = V6_EMBEDDING_V4.find((r) => matches(value, 128, r));
  if (embedding) return embedded(classifyV4(value & 0xffff_ffffn), embedding.range);
  if (matches(value, 128, V6_6TO4)) return embedded(classifyV4((value >> 80n) & 0xffff_ffffn), V6_6TO4.range);
  const rule = V6_RULES.find((r) => matches(value, 128, r))!;
  return { category: rule.category, range: rule.range };
}

function embedded(inner: AddressClass, outer: string): AddressClass {
  return inner.category === "public"
    ? inner
    : { category: inner.category, range: `${inner.range} in ${outer}` };
}

/**
 * null when the address may be connected to under this policy, else why not (shown to the user:
 * 422s, delivery logs, the test send). `name`: the host name the address was resolved from; the
 * answer then names only it, never the address, so that the refusal does not tell a caller what
 * an internal name resolves to.
 */
export function vetAddress(
  address: string,
  policy: { allowPrivateTargets: boolean },
  name?: string,
): string | null {
  const { category, range } = classifyAddress(address);
  if (category === "public") return null;
  if (policy.allowPrivateTargets && ALLOWED_WHEN_PRIVATE_TARGETS_ALLOWED.has(category)) return null;
  const hint = ALLOWED_WHEN_PRIVATE_TARGETS_ALLOWED.has(category)
    ? "; set MEETBOT_ALLOW_PRIVATE_WEBHOOK_TARGETS=1 to allow it"
    : "; webhooks may never target it";
  if (name !== undefined) return `${name} resolves to an address that is not public${hint}`;
  if (category === "invalid") return `${address} is not an IP address`;
  return `${address} is ${DESCRIPTIONS[category]} (${range})${hint}`;
}

/** Strict dotted quad (what resolvers return and the URL parser produces), as a 32-bit value. */
export function parseIPv4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0n;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return null;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

/** An IPv6 address (with "::", an optional dotted IPv4 tail and an optional %zone) as a 128-bit value. */
export function parseIPv6(text: string): bigint | null {
  let rest = text.replace(/%[^%]*$/, "");
  const groups: number[][] = [[], []]; // before and after "::"
  const halves = rest.split("::");
  if (halves.length > 2) return null;
  const tail = halves[halves.length - 1]!;
  const dotted = tail.includes(".") ? tail.slice(tail.lastIndexOf(":") + 1) : null;
  let v4: bigint | null = null;
  if (dotted !== null) {
    v4 = parseIPv4(dotted);
    if (v4 === null) return null;
    rest = rest.slice(0, rest.length - dotted.length) + "0:0"; // placeholder groups, filled below
  }
  const [head, after] = rest.split("::") as [string, string | undefined];
  for (const [i, half] of [head, after].entries()) {
    if (half === undefined || half === "") continue;
    for (const group of half.split(":")) {
      if (!/^[0-9a-f]{1,4}$/i.test(group)) return null;
      groups[i]!.push(parseInt(group, 16));
    }
  }
  const count = groups[0]!.length + groups[1]!.length;
  if (after === undefined ? count !== 8 : count > 7) return null;
  const all = [...groups[0]!, ...new Array<number>(8 - count).fill(0), ...groups[1]!];
  let value = 0n;
  for (const group of all) value = (value << 16n) | BigInt(group);
  if (v4 !== null) value = (value & ~0xffff_ffffn) | v4;
  return value;
}
