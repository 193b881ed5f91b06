// The static images: a placeholder for an item with no stored file, a page for journals and literature.

export const TEXT_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400">
<rect width="400" height="400" fill="#f3f1ea"/>
<rect x="105" y="80" width="190" height="240" rx="10" fill="#fff" stroke="#d6d0bf" stroke-width="4"/>
<g stroke="#b9b19a" stroke-width="9" stroke-linecap="round"><path d="M135 130h130M135 160h130M135 190h100M135 220h130M135 250h80"/></g>
<text x="200" y="360" text-anchor="middle" font-family="system-ui,sans-serif" font-size="22" fill="#857c64">text</text></svg>`;

export const PLACEHOLDER_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400">
<rect width="400" height="400" fill="#eef0f3"/>
<g fill="none" stroke="#98a2b3" stroke-width="10" stroke-linejoin="round"><rect x="110" y="120" width="180" height="150" rx="14"/><path d="M120 250l50-55 40 40 30-25 50 45"/></g>
<circle cx="245" cy="165" r="14" fill="#98a2b3"/>
<text x="200" y="320" text-anchor="middle" font-family="system-ui,sans-serif" font-size="22" fill="#667085">not archived yet</text></svg>`;
