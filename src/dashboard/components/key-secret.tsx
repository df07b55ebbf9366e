import { useEffect, useRef, useState } from "preact/hooks";

/**
 * A secret shown in full (a new API key, a webhook's signing secret) with a Copy button. When the
 * clipboard refuses (no permission, an insecure origin), the text is selected instead so that
 * Ctrl+C copies it. `focus`: a secret that just appeared in place of the form that made it takes
 * the focus, so that a keyboard user lands on its Copy button rather than at the top of the page.
 */
export function SecretValue({
  value,
  label,
  focus = false,
}: {
  value: string;
  label: string;
  focus?: boolean;
}) {
  const [copied, setCopied] = useState<"yes" | "failed" | null>(null);
  const code = useRef<HTMLElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (focus) button.current?.focus();
  }, [focus]);

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
      <button type="button" class="secondary" onClick={copy} ref={button}>
        Copy
      </button>
      <span role="status" class="hint">
        {copied === "yes" ? "Copied" : copied === "failed" ? "Selected: press Ctrl+C to copy" : ""}
      </span>
    </div>
  );
}
