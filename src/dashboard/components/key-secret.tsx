import { useRef, useState } from "preact/hooks";

/**
 * A secret shown in full (a new API key, a webhook's signing secret) with a Copy button. When the
 * clipboard refuses (no permission, an insecure origin), the text is selected instead so that
 * Ctrl+C copies it.
 */
export function SecretValue({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState<"yes" | "failed" | null>(null);
  const code = useRef<HTMLElement>(null);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied("yes");
    } catch {
      if (code.current) window.getSelection()?.selectAllChildren(code.current);
      setCopied("failed");
    }
  };

  return (
    <div class="secret">
      <code aria-label={label} ref={code}>
        {value}
      </code>
      <button type="button" class="secondary" onClick={copy}>
        Copy
      </button>
      <span role="status" class="hint">
        {copied === "yes" ? "Copied" : copied === "failed" ? "Selected: press Ctrl+C to copy" : ""}
      </span>
    </div>
  );
}
