/**
 * A task's source policy (spec `sources`): which domains it may search, fetch and cite. A domain
 * covers its subdomains (example.com covers www.example.com, not badexample.com). With
 * include_domains, only those are allowed; exclude_domains are never allowed, included or not.
 */
import type { SourcePolicy } from '../contract/index.js';

export interface DomainPolicy {
  /** Why `url` is outside the policy, or undefined when it is allowed (an unparsable URL is outside). */
  refuses(url: string | URL): string | undefined;
}

/** Lower case, without a leading `*.` or `.` and a trailing dot: the form domains are compared in. */
export function normalizeDomain(domain: string): string {
  return domain.trim().toLowerCase().replace(/^\*?\./, '').replace(/\.$/, '');
}

function covers(domain: string, host: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}

export const OPEN_POLICY: DomainPolicy = { refuses: () => undefined };

export function domainPolicy(policy: SourcePolicy | undefined): DomainPolicy {
  const include = policy?.include_domains ?? [];
  const exclude = policy?.exclude_domains ?? [];
  if (include.length === 0 && exclude.length === 0) return OPEN_POLICY;
  return {
    refuses(url) {
      let host: string;
      try {
        host = (typeof url === 'string' ? new URL(url) : url).hostname.toLowerCase().replace(/\.$/, '');
      } catch {
        return 'it is not a valid URL';
      }
      const excluded = exclude.find((d) => covers(d, host));
      if (excluded) return `${host} is excluded by the task's source policy (exclude_domains: ${excluded})`;
      if (include.length > 0 && !include.some((d) => covers(d, host))) return `${host} is outside the task's source policy (include_domains: ${include.slice(0, 10).join(', ')}${include.length > 10 ? ', …' : ''})`;
      return undefined;
    },
  };
}
