/**
 * True under CI (`CI=true`, as GitHub Actions and `.ci/run` set it). There, a test whose tool is
 * missing fails instead of skipping: `.ci/run` installs the tools, so a missing one is a broken image.
 */
export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';
