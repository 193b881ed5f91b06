// The static images: a placeholder for an item with no stored file, a page for journals and literature. Each
// carries its own dark colours (the same as base.css's --tile and --paper): an SVG shown as an <img> follows the
// color-scheme of the page that shows it (the system's, or the theme switch's choice), not the page's stylesheet.

export const TEXT_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400">
<style>.bg{fill:#f3f1ea}.sheet{fill:#fff;stroke:#d6d0bf}.ink{stroke:#b9b19a}.words{fill:#857c64}
@media (prefers-color-scheme: dark){.bg{fill:#23211c}.sheet{fill:#2c2a24;stroke:#5c5646}.ink{stroke:#5c5646}.words{fill:#a89f88}}</style>
<rect class="bg" width="400" height="400"/>
<rect class="sheet" x="105" y="80" width="190" height="240" rx="10" stroke-width="4"/>
<g class="ink" stroke-width="9" stroke-linecap="round"><path d="M135 130h130M135 160h130M135 190h100M135 220h130M135 250h80"/></g>
<text class="words" x="200" y="360" text-anchor="middle" font-family="system-ui,sans-serif" font-size="22">text</text></svg>`;

export const PLACEHOLDER_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400">
<style>.bg{fill:#eef0f3}.ink{stroke:#98a2b3}.dot{fill:#98a2b3}.words{fill:#667085}
@media (prefers-color-scheme: dark){.bg{fill:#1f2630}.ink{stroke:#4b5563}.dot{fill:#4b5563}.words{fill:#9aa4b2}}</style>
<rect class="bg" width="400" height="400"/>
<g class="ink" fill="none" stroke-width="10" stroke-linejoin="round"><rect x="110" y="120" width="180" height="150" rx="14"/><path d="M120 250l50-55 40 40 30-25 50 45"/></g>
<circle class="dot" cx="245" cy="165" r="14"/>
<text class="words" x="200" y="320" text-anchor="middle" font-family="system-ui,sans-serif" font-size="22">not archived yet</text></svg>`;
